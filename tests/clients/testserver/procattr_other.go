//go:build !linux

package testserver

import "syscall"

// procAttr puts the server in its own process group (Kill ends the group).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
