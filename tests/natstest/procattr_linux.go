package natstest

import (
	"os"
	"syscall"
)

// procAttr has the kernel kill the server when the test process dies first.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

func flock(f *os.File) error   { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
func funlock(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
