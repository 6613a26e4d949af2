package embedded

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	msqlite "modernc.org/sqlite"
)

// The files that mark a backup directory (Backup).
const (
	// BackupManifest is the file a complete backup holds: it is written
	// last, once everything else is synced, and describes the backup
	// (BackupInfo, as JSON).
	BackupManifest = "buzz-backup.json"
	// BackupIncomplete marks a backup being written, from the moment its
	// directory appears until after its manifest is synced. Open refuses a
	// directory holding it (ErrIncompleteBackup): a backup that was
	// interrupted is never taken for a store.
	BackupIncomplete = "buzz-backup.incomplete"
)

// backupFormat is the layout of a backup directory: a data directory (the
// database file DefaultFileName and its events directory) plus the
// manifest.
const backupFormat = 1

// ErrIncompleteBackup is Open's and CheckBackup's error for a directory
// holding a backup that was interrupted before it completed.
var ErrIncompleteBackup = errors.New("sqlite: the directory holds an incomplete backup (it was interrupted before it completed); take the backup again")

// BackupInfo describes a backup (the manifest's content).
type BackupInfo struct {
	Format int `json:"format"`
	// Created is when the snapshot was taken.
	Created time.Time `json:"created"`
	// Events is where the events are: "lsm" (the events engine). A backup
	// of an older build may say "sqlite" (its events in SQLite's tables):
	// the store restored from it is converted at its first Open.
	Events string `json:"events"`
	// Bytes is the size of the backup's files.
	Bytes int64 `json:"bytes"`
	// Duration is how long the backup took.
	Duration time.Duration `json:"duration_ns"`
	// Pause is how long writes waited for the snapshot: the engine's
	// checkpoint.
	Pause time.Duration `json:"pause_ns"`
}

// Backup writes a consistent snapshot of the store into dir while the
// store serves: the directory is a data directory Open opens as it is
// (after it is copied elsewhere, or in place). dir must not exist, or be
// an empty directory, or hold a backup that was interrupted (which is
// replaced); anything else is refused.
//
// The snapshot is one instant of the store: every write acknowledged
// before Backup was called is in it, and the events agree with the rest
// (SQLite's tables and the LSM engine are captured at the same point of
// the writer, between two commits of both). Writes go on meanwhile: the
// writer pauses only while the engine's tables are hard-linked and its log
// copied; SQLite's pages are then copied from a read snapshot taken at that
// point, which keeps its write-ahead log from being reset until the copy
// ends.
//
// The directory holds BackupIncomplete from the moment it appears (it is
// created under a temporary name with the marker, then renamed) until the
// manifest BackupManifest is written and synced, last; an interrupted
// backup (a crash, kill -9) is refused by Open and CheckBackup. On an
// error Backup removes what it wrote.
func (s *Store) Backup(ctx context.Context, dir string) (BackupInfo, error) {
	start := time.Now()
	if err := s.eventsOff(); err != nil {
		return BackupInfo{}, err
	}
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return BackupInfo{}, ErrClosed
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	if own := filepath.Dir(s.path); abs == own {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %s is the store's own directory", dir)
	}
	if err := startBackupDir(abs); err != nil {
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	info, err := s.backup(ctx, abs, start)
	if err != nil {
		_ = os.RemoveAll(abs)
		return BackupInfo{}, fmt.Errorf("sqlite: backup: %w", err)
	}
	return info, nil
}

// The messages of the debug records a backup logs (WithLogger) as it goes:
// the snapshot of both engines is taken (the writer goes on), and
// SQLite's pages and the relay key are copied and synced (the manifest
// is next).
const (
	BackupSnapshotTaken  = "sqlite: backup: snapshot taken"
	BackupDatabaseCopied = "sqlite: backup: database copied"
)

func (s *Store) backup(ctx context.Context, dir string, start time.Time) (BackupInfo, error) {
	info := BackupInfo{Format: backupFormat, Events: "lsm"}
	// A connection of its own, whose read transaction pins the snapshot
	// the copy reads.
	src, err := sql.Open("sqlite", s.dsn(true))
	if err != nil {
		return info, err
	}
	defer src.Close()
	src.SetMaxOpenConns(1)
	conn, err := src.Conn(ctx)
	if err != nil {
		return info, err
	}
	defer conn.Close()
	pinned := false
	pin := func() error {
		if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
			return err
		}
		pinned = true
		var n int
		return conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n)
	}
	unpin := func() {
		if pinned {
			pinned = false
			_, _ = conn.ExecContext(context.Background(), `ROLLBACK`)
		}
	}
	defer unpin()

	// Between two batches of the writer, with the engine's writer lock
	// held (no event is being saved): SQLite's last commit and the
	// engine's are the same instant, the one both copies take.
	var ran bool
	var perr error
	err = s.submit(ctx, func(w *writer) error {
		if ran { // a batch replayed after a failure: done already
			return nil
		}
		ran = true
		t0 := time.Now()
		defer func() { info.Pause = time.Since(t0) }()
		tx, err := w.eventsTx()
		if err != nil {
			perr = err
			return nil
		}
		if perr = pin(); perr != nil {
			return nil
		}
		perr = tx.Checkpoint(filepath.Join(dir, DefaultFileName+EventsDirSuffix))
		return nil
	})
	err = cmp.Or(err, perr)
	if err != nil {
		return info, err
	}
	info.Created = time.Now().UTC()
	s.cfg.log.Debug(BackupSnapshotTaken, "dir", dir, "pause", info.Pause)

	dbFile := filepath.Join(dir, DefaultFileName)
	err = conn.Raw(func(dc any) error {
		b, ok := dc.(interface {
			NewBackup(string) (*msqlite.Backup, error)
		})
		if !ok {
			return errors.New("the SQLite driver has no online backup")
		}
		bk, err := b.NewBackup(dbFile)
		if err != nil {
			return err
		}
		for {
			more, err := bk.Step(-1)
			if err != nil {
				return errors.Join(err, bk.Finish())
			}
			if !more {
				return bk.Finish()
			}
		}
	})
	unpin()
	if err != nil {
		return info, fmt.Errorf("copy the database: %w", err)
	}
	if err := syncPath(dbFile); err != nil {
		return info, err
	}
	// The relay key (RelayKey), written once and never changed.
	key := filepath.Join(filepath.Dir(s.path), RelayKeyFileName)
	if _, err := os.Stat(key); err == nil {
		if err := copyFile(key, filepath.Join(dir, RelayKeyFileName)); err != nil {
			return info, fmt.Errorf("copy the relay key: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return info, err
	}
	s.cfg.log.Debug(BackupDatabaseCopied, "dir", dir)

	if info.Bytes, err = dirSize(dir); err != nil {
		return info, err
	}
	info.Duration = time.Since(start)
	if err := finishBackupDir(dir, info); err != nil {
		return info, err
	}
	return info, nil
}

// startBackupDir makes dir a directory holding BackupIncomplete and
// nothing else. It is created under a temporary name beside it, with the
// marker synced, and renamed: dir never exists without the marker.
func startBackupDir(dir string) error {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s exists and is not a directory", dir)
	default:
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		interrupted := false
		for _, e := range entries {
			if e.Name() == BackupIncomplete {
				interrupted = true
			}
		}
		if len(entries) > 0 && !interrupted {
			return fmt.Errorf("%s is not empty (a backup goes into a new or empty directory, or replaces an interrupted backup)", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	marker := "This backup is being written, or was interrupted before it completed: no store opens it.\n"
	if err := writeSynced(filepath.Join(tmp, BackupIncomplete), []byte(marker)); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	if err := syncPath(tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	return syncPath(parent)
}

// finishBackupDir writes the manifest, synced, then removes the marker.
func finishBackupDir(dir string, info BackupInfo) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(dir, BackupManifest), append(b, '\n')); err != nil {
		return err
	}
	if err := syncPath(dir); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, BackupIncomplete)); err != nil {
		return err
	}
	return syncPath(dir)
}

// CheckBackup reports whether dir holds a complete backup, and describes
// it: ErrIncompleteBackup for an interrupted one, an error naming what is
// missing for a directory that holds no backup.
func CheckBackup(dir string) (BackupInfo, error) {
	var info BackupInfo
	if _, err := os.Stat(filepath.Join(dir, BackupIncomplete)); err == nil {
		return info, fmt.Errorf("%w: %s", ErrIncompleteBackup, dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, BackupManifest))
	if errors.Is(err, fs.ErrNotExist) {
		return info, fmt.Errorf("sqlite: %s holds no backup (no %s)", dir, BackupManifest)
	}
	if err != nil {
		return info, fmt.Errorf("sqlite: %w", err)
	}
	if err := json.Unmarshal(b, &info); err != nil || info.Format != backupFormat {
		return info, fmt.Errorf("sqlite: %s: not a backup manifest this build reads (format %d)", filepath.Join(dir, BackupManifest), info.Format)
	}
	if _, err := os.Stat(filepath.Join(dir, DefaultFileName)); err != nil {
		return info, fmt.Errorf("sqlite: backup %s lacks its database: %w", dir, err)
	}
	if info.Events == "lsm" {
		if _, err := os.Stat(filepath.Join(dir, DefaultFileName+EventsDirSuffix)); err != nil {
			return info, fmt.Errorf("sqlite: backup %s lacks its events: %w", dir, err)
		}
	}
	return info, nil
}

// Restore copies the complete backup in from (CheckBackup) into the data
// directory to, which must not exist or be empty: a store is never
// overwritten. The copy is written under a temporary name beside to and
// renamed once synced, so to never holds half a store. The backup is left
// as it was.
func Restore(ctx context.Context, from, to string) error {
	if _, err := CheckBackup(from); err != nil {
		return err
	}
	if entries, err := os.ReadDir(to); err == nil && len(entries) > 0 {
		return fmt.Errorf("sqlite: restore: %s is not empty: restore into a new or empty directory (move the store there away first)", to)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite: restore: %w", err)
	}
	to = filepath.Clean(to)
	parent := filepath.Dir(to)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return fmt.Errorf("sqlite: restore: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(to)+".restore-")
	if err != nil {
		return fmt.Errorf("sqlite: restore: %w", err)
	}
	err = copyTree(ctx, from, tmp)
	if err == nil {
		_ = os.Remove(to) // empty, or absent
		err = os.Rename(tmp, to)
	}
	if err == nil {
		err = syncPath(parent)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("sqlite: restore: %w", err)
	}
	return nil
}

// copyTree copies the regular files and directories under from into to
// (which exists), syncing each file and directory.
func copyTree(ctx context.Context, from, to string) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			if rel != "." {
				if err := os.Mkdir(dst, 0o700); err != nil {
					return err
				}
			}
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", path)
		}
		if err := copyFile(path, dst); err != nil {
			return err
		}
		return syncPath(filepath.Dir(dst))
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeSynced writes a new file with b and syncs it.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncPath syncs a file or a directory (its entries).
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) {
		return nil // a file system whose directories cannot be synced
	}
	return err
}

// dirSize is the size of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}

// incompleteBackup refuses to open a store in a directory holding an
// interrupted backup.
func incompleteBackup(file string) error {
	dir := filepath.Dir(file)
	if _, err := os.Stat(filepath.Join(dir, BackupIncomplete)); err == nil {
		return fmt.Errorf("%w: %s", ErrIncompleteBackup, dir)
	}
	return nil
}
