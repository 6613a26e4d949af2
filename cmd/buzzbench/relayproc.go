package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// target is one relay under test.
type target struct {
	Label string `json:"label"`
	URL   string `json:"url"`
	Start string `json:"start,omitempty"`
	PID   int    `json:"pid,omitempty"`

	proc *relayProc
}

// rss returns the relay's resident memory in bytes: the sum over the
// process group of a started relay, or the process given by -pid.
func (t *target) rss() (int64, bool) {
	switch {
	case t.proc != nil:
		return groupRSS(t.proc.pgid)
	case t.PID > 0:
		return pidRSS(t.PID)
	}
	return 0, false
}

// peakRSS returns the relay's resident high-water mark in bytes (VmHWM,
// the most it has held since it started), summed like rss.
func (t *target) peakRSS() (int64, bool) {
	switch {
	case t.proc != nil:
		return groupStatus(t.proc.pgid, "VmHWM:")
	case t.PID > 0:
		return pidStatus(t.PID, "VmHWM:")
	}
	return 0, false
}

// schedTimes is CPU time and run-queue wait summed over threads, from
// /proc/<pid>/task/<tid>/schedstat: time on a CPU, then time runnable but
// waiting for one. A wait far above the CPU time means the relay's latency
// was set by the machine's other work, not by the relay.
type schedTimes struct {
	CPU, Wait time.Duration
}

func (a schedTimes) sub(b schedTimes) schedTimes {
	return schedTimes{a.CPU - b.CPU, a.Wait - b.Wait}
}

// sched returns the relay's schedTimes: summed over the process group of a
// started relay (every pod its command started), or over the process given
// by -pid.
func (t *target) sched() (schedTimes, bool) {
	switch {
	case t.proc != nil:
		return groupSched(t.proc.pgid)
	case t.PID > 0:
		return pidSched(t.PID)
	}
	return schedTimes{}, false
}

// pidSched sums /proc/<pid>/task/*/schedstat.
func pidSched(pid int) (schedTimes, bool) {
	paths, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/[0-9]*/schedstat", pid))
	if err != nil || len(paths) == 0 {
		return schedTimes{}, false
	}
	var sum schedTimes
	found := false
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		if st, ok := parseSchedstat(data); ok {
			sum.CPU += st.CPU
			sum.Wait += st.Wait
			found = true
		}
	}
	return sum, found
}

// parseSchedstat reads one schedstat line: "<cpu ns> <wait ns> <slices>".
func parseSchedstat(data []byte) (schedTimes, bool) {
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return schedTimes{}, false
	}
	cpu, err1 := strconv.ParseInt(f[0], 10, 64)
	wait, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return schedTimes{}, false
	}
	return schedTimes{time.Duration(cpu), time.Duration(wait)}, true
}

// groupSched sums pidSched over the processes of a process group.
func groupSched(pgid int) (schedTimes, bool) {
	var sum schedTimes
	found := false
	for _, pid := range groupPIDs(pgid) {
		if st, ok := pidSched(pid); ok {
			sum.CPU += st.CPU
			sum.Wait += st.Wait
			found = true
		}
	}
	return sum, found
}

// relayProc is a relay started by -start: "sh -c cmd" in its own process
// group, so stopping it stops everything the command started.
type relayProc struct {
	cmd     *exec.Cmd
	pgid    int
	logPath string
	exited  chan struct{}
}

// startRelay runs command and waits until every one of urls accepts
// WebSocket connections for urls[0]'s host (one command may start several
// pods of one relay: urls[0] and the addresses of the others).
func startRelay(ctx context.Context, command string, urls []string, logDir string) (*relayProc, error) {
	logf, err := os.CreateTemp(logDir, "relay-*.log")
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command("sh", "-c", command)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %q: %w", command, err)
	}
	p := &relayProc{cmd: cmd, pgid: cmd.Process.Pid, logPath: logf.Name(), exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for _, url := range urls {
		for {
			dctx, cancel := context.WithTimeout(ctx, time.Second)
			c, err := dial(dctx, url, dialOptions{relayURL: urls[0]})
			cancel()
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-p.exited:
				return nil, fmt.Errorf("relay command %q exited before accepting connections (log: %s)", command, p.logPath)
			case <-ctx.Done():
				p.stop()
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				p.stop()
				return nil, fmt.Errorf("relay at %s did not accept connections within 30s: %v (log: %s)", url, err, p.logPath)
			}
		}
	}
	return p, nil
}

// stop sends SIGTERM to the process group, then SIGKILL after 10 s.
func (p *relayProc) stop() {
	_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		<-p.exited
	}
	// Children that outlived the shell.
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
}

// pidRSS reads VmRSS of one process.
func pidRSS(pid int) (int64, bool) { return pidStatus(pid, "VmRSS:") }

// pidStatus reads one "kB" field (such as "VmRSS:") of /proc/<pid>/status,
// in bytes.
func pidStatus(pid int, field string) (int64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	return parseStatusKB(data, field)
}

// parseVmRSS extracts VmRSS (in bytes) from /proc/<pid>/status contents.
func parseVmRSS(status []byte) (int64, bool) { return parseStatusKB(status, "VmRSS:") }

// parseStatusKB extracts field, a "kB" line such as "VmHWM:", in bytes from
// /proc/<pid>/status contents.
func parseStatusKB(status []byte, field string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, field) {
			continue
		}
		f := strings.Fields(line[len(field):])
		if len(f) < 1 {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// groupRSS sums VmRSS over the processes of a process group.
func groupRSS(pgid int) (int64, bool) { return groupStatus(pgid, "VmRSS:") }

// groupStatus sums one "kB" field of /proc/<pid>/status over the processes
// of a process group.
func groupStatus(pgid int, field string) (int64, bool) {
	var total int64
	found := false
	for _, pid := range groupPIDs(pgid) {
		if v, ok := pidStatus(pid, field); ok {
			total += v
			found = true
		}
	}
	return total, found
}

// groupPIDs lists the processes of a process group.
func groupPIDs(pgid int) []int {
	entries, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil
	}
	var pids []int
	for _, path := range entries {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		g, err := statPgrp(data)
		if err != nil || g != pgid {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// statPgrp returns the process group field of /proc/<pid>/stat.
func statPgrp(stat []byte) (int, error) {
	// pid (comm) state ppid pgrp ...; comm may contain spaces and parens.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 {
		return 0, errors.New("malformed stat")
	}
	return strconv.Atoi(f[2])
}
