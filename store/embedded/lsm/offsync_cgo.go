//go:build linux && cgo

package lsm

/*
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

// buzz_syncer is a thread that syncs one file on request and then signals
// an eventfd, so that the Go side waits in the network poller rather than
// in a system call that holds its P.
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t thread;
	int fd;      // the file to sync
	int efd;     // eventfd written once per finished request
	int pending; // a request waits for the thread
	int full;    // fsync rather than fdatasync
	int stop;
	int err;     // errno of the last sync, 0 for success
} buzz_syncer;

// buzz_syncer_run holds the mutex only to take a request and to record
// its result, never while it signals: on one core, a Go thread woken by the
// eventfd (or a syncer woken by the condition) that found the mutex still
// held would sleep again until the other side ran and released it, two
// more context switches per sync.
static void *buzz_syncer_run(void *arg) {
	buzz_syncer *s = arg;
	for (;;) {
		pthread_mutex_lock(&s->mu);
		while (!s->pending && !s->stop) {
			pthread_cond_wait(&s->cond, &s->mu);
		}
		if (!s->pending) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		int fd = s->fd, full = s->full;
		pthread_mutex_unlock(&s->mu);
		int r = full ? fsync(fd) : fdatasync(fd);
		int e = r == 0 ? 0 : errno;
		pthread_mutex_lock(&s->mu);
		s->err = e;
		s->pending = 0;
		pthread_mutex_unlock(&s->mu);
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
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	int e = pthread_create(&s->thread, NULL, buzz_syncer_run, s);
	if (e != 0) {
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->mu);
		free(s);
		*err = e;
		return NULL;
	}
	return s;
}

static void buzz_syncer_request(buzz_syncer *s, int full) {
	pthread_mutex_lock(&s->mu);
	s->full = full;
	s->pending = 1;
	pthread_mutex_unlock(&s->mu);
	pthread_cond_signal(&s->cond);
}

static int buzz_syncer_err(buzz_syncer *s) {
	pthread_mutex_lock(&s->mu);
	int e = s->err;
	pthread_mutex_unlock(&s->mu);
	return e;
}

// buzz_syncer_free stops the thread (after the request in progress, if
// any) and frees the syncer.
static void buzz_syncer_free(buzz_syncer *s) {
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
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
	"syscall"

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
	var c C.int
	if full {
		c = 1
	}
	C.buzz_syncer_request(f.s, c)
	var b [8]byte
	if _, err := io.ReadFull(f.ev, b[:]); err != nil {
		// The thread still owns the request: wait for it before the
		// file can be closed. Reading the eventfd cannot fail short of
		// a bug, so this is the end of this file's syncs.
		return fmt.Errorf("lsm: wait for the sync of %s: %w", f.name, err)
	}
	if e := C.buzz_syncer_err(f.s); e != 0 {
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
