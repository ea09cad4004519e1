package pgtest

import "syscall"

// procAttr runs Postgres as cred (nil: as ourselves) and has the kernel kill it when the test process dies first.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
