package testserver

import "syscall"

// ProcAttr puts the server in its own process group (Kill ends the group) and has the kernel kill it when the test
// process dies first (a test timeout), so no server outlives its test.
func ProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
