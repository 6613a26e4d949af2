package embedded

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/buzzrelay/buzz/nostr"
)

// RelayKeyFileName is the file, next to the database in its directory, that
// holds the relay master key (64 hex characters and a newline, mode 0600).
const RelayKeyFileName = "relay.key"

// RelayKey returns the relay master key kept in RelayKeyFileName beside the
// database. When the file does not exist it is created with candidate,
// atomically (a complete file appears or none does) and with mode 0600; a
// concurrent creator's key wins over candidate. An existing file readable
// or writable by anyone but its owner is refused, as is one that does not
// hold a valid key. The key is never logged.
func (s *Store) RelayKey(_ context.Context, candidate nostr.SecretKey) (nostr.SecretKey, error) {
	if candidate == (nostr.SecretKey{}) {
		return nostr.SecretKey{}, errors.New("sqlite: relay key: zero candidate")
	}
	path := filepath.Join(filepath.Dir(s.path), RelayKeyFileName)
	if sk, err := readRelayKey(path); !errors.Is(err, os.ErrNotExist) {
		return sk, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), RelayKeyFileName+".tmp*")
	if err != nil {
		return nostr.SecretKey{}, fmt.Errorf("sqlite: relay key: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp creates the file 0600; Chmod states it.
	_, werr := tmp.WriteString(candidate.Hex() + "\n")
	werr = errors.Join(werr, tmp.Chmod(0o600), tmp.Sync(), tmp.Close())
	if werr != nil {
		return nostr.SecretKey{}, fmt.Errorf("sqlite: relay key: write %s: %w", path, werr)
	}
	// Link fails if another process created the file meanwhile: its key wins.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return nostr.SecretKey{}, fmt.Errorf("sqlite: relay key: create %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return readRelayKey(path)
}

func readRelayKey(path string) (nostr.SecretKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nostr.SecretKey{}, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nostr.SecretKey{}, fmt.Errorf("sqlite: relay key file %s is accessible to others (mode %04o); make it 0600", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nostr.SecretKey{}, fmt.Errorf("sqlite: relay key: %w", err)
	}
	sk, err := nostr.ParseSecretKey(strings.TrimSpace(string(b)))
	if err != nil {
		return nostr.SecretKey{}, fmt.Errorf("sqlite: relay key file %s does not hold a valid secret key", path)
	}
	return sk, nil
}

// HasRelayKey reports whether the relay master key file exists beside the
// database (it neither reads nor creates the key).
func (s *Store) HasRelayKey(context.Context) (bool, error) {
	_, err := os.Stat(filepath.Join(filepath.Dir(s.path), RelayKeyFileName))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: relay key: %w", err)
	}
	return true, nil
}
