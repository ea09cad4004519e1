//go:build !linux

package natstest

import (
	"os"
	"syscall"
)

func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// flock is a best effort elsewhere: the in-process mutex still serialises one test binary's builds.
func flock(*os.File) error   { return nil }
func funlock(*os.File) error { return nil }
