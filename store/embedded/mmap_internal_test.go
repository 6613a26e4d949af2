package embedded

import (
	"context"
	"database/sql"
	"testing"
)

// TestReadMmap checks that every read connection maps the database file
// as configured (WithReadMmap: the default, a size, none) and that the
// writer never does; and that an out-of-range size is refused at Open.
func TestReadMmap(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []Option
		want int64
	}{
		{"default", nil, DefaultReadMmap},
		{"64 MiB", []Option{WithReadMmap(64 << 20)}, 64 << 20},
		{"off", []Option{WithReadMmap(0)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(ctx, t.TempDir(), append(tc.opts, WithReadConnections(3))...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Hold every read connection at once, so each is asked.
			conns := make([]*sql.Conn, 3)
			for i := range conns {
				if conns[i], err = s.rdb.Conn(ctx); err != nil {
					t.Fatal(err)
				}
				defer conns[i].Close()
				var n int64
				if err := conns[i].QueryRowContext(ctx, `PRAGMA mmap_size`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != tc.want {
					t.Errorf("read connection %d maps %d bytes, want %d", i, n, tc.want)
				}
			}
			var w int64 = -1
			if err := s.submit(ctx, func(wr *writer) error {
				return wr.conn.QueryRowContext(ctx, `PRAGMA mmap_size`).Scan(&w)
			}); err != nil {
				t.Fatal(err)
			}
			if w != 0 {
				t.Errorf("the writer maps %d bytes, want 0", w)
			}
		})
	}
	for _, bad := range []int64{-1, DefaultReadMmap + 1} {
		if s, err := Open(ctx, t.TempDir(), WithReadMmap(bad)); err == nil {
			s.Close()
			t.Errorf("WithReadMmap(%d) accepted", bad)
		}
	}
}
