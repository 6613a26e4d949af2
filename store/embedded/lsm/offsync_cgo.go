//go:build linux && cgo

package lsm

/*
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

// Requests, in buzz_syncer.req.
enum { BUZZ_SYNC_NONE = 0, BUZZ_SYNC_DATA = 1, BUZZ_SYNC_FULL = 2, BUZZ_SYNC_STOP = 3 };

// buzz_syncer is a thread that syncs one file on request and then signals
// an eventfd, so that the Go side waits in the network poller rather than
// in a system call that holds its P.
//
// A request is one word, req, which the Go side sets and the thread clears
// once it has recorded the result in err: the Go side asks with an atomic
// store and a futex wake, a raw system call that neither leaves its P nor
// takes a lock, and the thread waits on the same word. One request is
// outstanding at a time (the Go side serializes them). A mutex and a
// condition variable took three futex calls a sync where this takes two,
// and two cgo calls on the Go side where this takes none.
typedef struct {
	pthread_t thread;
	int fd;      // the file to sync
	int efd;     // eventfd written once per finished request
	int32_t req; // futex word: a BUZZ_SYNC_* request, BUZZ_SYNC_NONE once done
	int32_t err; // errno of the last sync, 0 for success
} buzz_syncer;

static void *buzz_syncer_run(void *arg) {
	buzz_syncer *s = arg;
	for (;;) {
		int32_t r;
		while ((r = __atomic_load_n(&s->req, __ATOMIC_ACQUIRE)) == BUZZ_SYNC_NONE) {
			syscall(SYS_futex, &s->req, FUTEX_WAIT_PRIVATE, BUZZ_SYNC_NONE, NULL, NULL, 0);
		}
		if (r == BUZZ_SYNC_STOP) {
			break;
		}
		int rc = r == BUZZ_SYNC_FULL ? fsync(s->fd) : fdatasync(s->fd);
		__atomic_store_n(&s->err, rc == 0 ? 0 : errno, __ATOMIC_RELEASE);
		// Done, unless a stop came meanwhile (a Go side that gave up
		// waiting): then the next turn of the loop sees it.
		__atomic_compare_exchange_n(&s->req, &r, BUZZ_SYNC_NONE, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
		uint64_t one = 1;
		while (write(s->efd, &one, sizeof one) < 0 && errno == EINTR) {
		}
	}
	return NULL;
}

// buzz_syncer_new returns a started syncer, or NULL with *err set.
static buzz_syncer *buzz_syncer_new(int fd, int efd, int *err) {
	buzz_syncer *s = calloc(1, sizeof *s);
	if (s == NULL) {
		*err = ENOMEM;
		return NULL;
	}
	s->fd = fd;
	s->efd = efd;
	int e = pthread_create(&s->thread, NULL, buzz_syncer_run, s);
	if (e != 0) {
		free(s);
		*err = e;
		return NULL;
	}
	return s;
}

// buzz_syncer_free stops the thread (after the sync in progress, if any)
// and frees the syncer.
static void buzz_syncer_free(buzz_syncer *s) {
	__atomic_store_n(&s->req, BUZZ_SYNC_STOP, __ATOMIC_RELEASE);
	syscall(SYS_futex, &s->req, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_join(s->thread, NULL);
	free(s);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// offPSyncFS wraps fs so that the write-ahead log's files are synced by a
// thread of their own while the goroutine asking waits in the network
// poller. A sync in a system call holds its P until the runtime's monitor
// takes it back, and on one P that stops every connection for most of the
// sync (measured in an execution trace); this way the next events are read,
// verified and applied while the disk syncs the previous ones.
func offPSyncFS(fs vfs.FS) vfs.FS {
	return logFS{FS: fs, wrap: func(f vfs.File, name string) (vfs.File, error) {
		of, err := newOffPFile(f, name)
		if err != nil {
			return nil, errors.Join(err, f.Close())
		}
		return of, nil
	}}
}

// offPFile is a log file whose Sync and SyncData run on its syncer.
type offPFile struct {
	vfs.File
	name string

	mu     sync.Mutex // one sync at a time; guards closed
	s      *C.buzz_syncer
	ev     *os.File // the eventfd, read through the network poller
	closed bool
}

func newOffPFile(f vfs.File, name string) (*offPFile, error) {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("lsm: eventfd for %s: %w", name, err)
	}
	var cerr C.int
	s := C.buzz_syncer_new(C.int(f.Fd()), C.int(efd), &cerr)
	if s == nil {
		unix.Close(efd)
		return nil, fmt.Errorf("lsm: sync thread for %s: %w", name, syscall.Errno(cerr))
	}
	return &offPFile{File: f, name: name, s: s, ev: os.NewFile(uintptr(efd), name+".sync")}, nil
}

func (f *offPFile) Sync() error     { return f.sync(true) }
func (f *offPFile) SyncData() error { return f.sync(false) }

func (f *offPFile) sync(full bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("lsm: sync %s: %w", f.name, os.ErrClosed)
	}
	req := int32(C.BUZZ_SYNC_DATA)
	if full {
		req = C.BUZZ_SYNC_FULL
	}
	word := (*int32)(unsafe.Pointer(&f.s.req))
	atomic.StoreInt32(word, req)
	// A futex wake does not block: a raw system call, which keeps the P
	// and does not wake the runtime's monitor as a cgo call would.
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), C.FUTEX_WAKE_PRIVATE, 1, 0, 0, 0)
	var b [8]byte
	if _, err := io.ReadFull(f.ev, b[:]); err != nil {
		// The thread still owns the request: wait for it before the
		// file can be closed. Reading the eventfd cannot fail short of
		// a bug, so this is the end of this file's syncs.
		return fmt.Errorf("lsm: wait for the sync of %s: %w", f.name, err)
	}
	if e := atomic.LoadInt32((*int32)(unsafe.Pointer(&f.s.err))); e != 0 {
		op := "fdatasync"
		if full {
			op = "fsync"
		}
		return &os.PathError{Op: op, Path: f.name, Err: syscall.Errno(e)}
	}
	return nil
}

// Close stops the syncer (after a sync in progress) and closes the file.
func (f *offPFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return f.File.Close()
	}
	f.closed = true
	C.buzz_syncer_free(f.s)
	f.s = nil
	return errors.Join(f.ev.Close(), f.File.Close())
}
