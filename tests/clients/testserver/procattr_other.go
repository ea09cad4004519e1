//go:build !linux

package testserver

import "syscall"

// ProcAttr puts the server in its own process group (Kill ends the group).
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
