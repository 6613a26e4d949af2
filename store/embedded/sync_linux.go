package embedded

import (
	"os"
	"syscall"
)

// syncData flushes f's data (and the size that reaches it) to stable
// storage: fdatasync, as SQLite uses on Linux.
func syncData(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
