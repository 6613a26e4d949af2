package lsm

import (
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// logFS passes every write-ahead log file (*.log) that fs opens for
// writing — created, reused from an obsolete log, or opened read-write —
// through wrap; every other file is returned as fs opened it.
type logFS struct {
	vfs.FS
	wrap func(f vfs.File, name string) (vfs.File, error)
}

func (l logFS) log(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return l.wrap(f, name)
}

func (l logFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := l.FS.Create(name, c)
	return l.log(f, name, err)
}

func (l logFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := l.FS.ReuseForWrite(old, name, c)
	return l.log(f, name, err)
}

func (l logFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := l.FS.OpenReadWrite(name, c, opts...)
	return l.log(f, name, err)
}
