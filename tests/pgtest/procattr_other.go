//go:build !linux

package pgtest

import "syscall"

// procAttr runs Postgres as cred (nil: as ourselves).
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
