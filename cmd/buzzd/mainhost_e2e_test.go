package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buzzrelay/buzz/store/embedded"
	"github.com/buzzrelay/buzz/store/postgres"
)

// runBuzzdCmd runs the buzzd binary to completion with exactly env (plus
// PATH and HOME), as a user runs it, and returns its combined output and
// exit code.
func runBuzzdCmd(t *testing.T, env map[string]string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBuzzd(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatalf("buzzd %v: %v\n%s", args, err, out)
	}
	return string(out), 0
}

// TestE2EMainHostProtected: buzzd records RELAY_URL's host in the store
// as it starts; the admin CLI, run with an environment that names another
// relay URL or none, refuses to archive that host and still archives
// others; and buzzd refuses to start when its main host's community was
// archived anyway (by an older tool), saying how to fix it.
func TestE2EMainHostProtected(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		dir := t.TempDir()
		mainHostProtected(t, map[string]string{"BUZZ_DATA_DIR": dir}, func(ctx context.Context, host string) error {
			st, err := embedded.Open(ctx, dir)
			if err != nil {
				return err
			}
			defer st.Close()
			c, err := st.CommunityByHost(ctx, host)
			if err != nil {
				return err
			}
			_, _, err = st.SetArchived(ctx, c.ID, c.OwnerPubKey, true, 0)
			return err
		})
	})
	t.Run("postgres", func(t *testing.T) {
		url := freshDatabase(t)
		mainHostProtected(t, map[string]string{"DATABASE_URL": url, "BUZZ_AUTO_MIGRATE": "on", "BUZZ_DATA_DIR": t.TempDir()}, func(ctx context.Context, host string) error {
			st, err := postgres.Open(ctx, url)
			if err != nil {
				return err
			}
			defer st.Close()
			c, err := st.CommunityByHost(ctx, host)
			if err != nil {
				return err
			}
			_, _, err = st.SetArchived(ctx, c.ID, c.OwnerPubKey, true, 0)
			return err
		})
	})
}

func mainHostProtected(t *testing.T, storeEnv map[string]string, archiveBehindCLI func(ctx context.Context, host string) error) {
	port := freePort(t)
	mainHost := "localhost:" + strconv.Itoa(port)
	settings := map[string]string{"BUZZ_LOG_LEVEL": "warn"}
	for k, v := range storeEnv {
		settings[k] = v
	}
	p := startBuzzd(t, port, settings) // RELAY_URL=ws://localhost:PORT
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("buzzd exited %d\n%s", code, p.out.String())
	}

	// The CLI's environment: the store only (RELAY_URL unset, so its own
	// default names another host), or a RELAY_URL naming another relay.
	cliEnvs := map[string]map[string]string{
		"no RELAY_URL":    {},
		"other RELAY_URL": {"RELAY_URL": "ws://elsewhere.example"},
	}
	for name, extra := range cliEnvs {
		env := map[string]string{}
		for k, v := range storeEnv {
			env[k] = v
		}
		for k, v := range extra {
			env[k] = v
		}
		out, code := runBuzzdCmd(t, env, "admin", "community", "archive", mainHost)
		if code == 0 || !strings.Contains(out, "buzzd: admin: community archive: refused: "+mainHost+" is the relay's main host") {
			t.Fatalf("%s: archiving the main host: exit %d\n%s", name, code, out)
		}
		if out, code := runBuzzdCmd(t, env, "admin", "community", "list"); code != 0 || !strings.Contains(out, mainHost) || strings.Contains(out, "archived") ||
			!strings.Contains(out, "active (the relay's main host)") {
			t.Fatalf("%s: after the refusal, list: exit %d\n%s", name, code, out)
		}
	}
	// Other communities are archived as before.
	if out, code := runBuzzdCmd(t, storeEnv, "admin", "community", "add", "side.example"); code != 0 {
		t.Fatalf("add: exit %d\n%s", code, out)
	}
	if out, code := runBuzzdCmd(t, storeEnv, "admin", "community", "archive", "side.example"); code != 0 || !strings.Contains(out, "archived: side.example") {
		t.Fatalf("archive another host: exit %d\n%s", code, out)
	}

	// The main host archived behind the CLI's back: buzzd refuses to start
	// and names the fix, instead of reporting it ready and answering 404.
	if err := archiveBehindCLI(t.Context(), mainHost); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"RELAY_URL": "ws://" + mainHost, "BUZZ_BIND_ADDR": "127.0.0.1:" + strconv.Itoa(port)}
	for k, v := range settings {
		env[k] = v
	}
	out, code := runBuzzdCmd(t, env)
	if code == 0 || strings.Contains(out, "community ready") ||
		!strings.Contains(out, "buzzd: the community of RELAY_URL host "+mainHost) ||
		!strings.Contains(out, "buzzd admin community unarchive "+mainHost) {
		t.Fatalf("start with the main host archived: exit %d\n%s", code, out)
	}
	// Unarchived, it starts again.
	if out, code := runBuzzdCmd(t, storeEnv, "admin", "community", "unarchive", mainHost); code != 0 {
		t.Fatalf("unarchive: exit %d\n%s", code, out)
	}
	p = startBuzzd(t, port, settings)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, time.Minute); code != 0 {
		t.Fatalf("buzzd exited %d after unarchive\n%s", code, p.out.String())
	}
}
