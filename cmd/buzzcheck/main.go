// Command buzzcheck checks isolation conformance traces (JSONL, schema
// version 2, as written by conformance/trace) with the independent checker
// and exits non-zero on any breach.
//
// Usage:
//
//	buzzcheck [-require action,action,...] [-json] trace.jsonl [more.jsonl ...]
//	buzzcheck - < trace.jsonl
//
// Each file is one trace (one connection). Exit status: 0 when every trace
// is accepted, 1 when some trace has a violation, 2 on a usage or read
// error.
//
// It imports conformance/checker only of buzz, and must not import the relay
// or tenant: a trace is judged by code that shares nothing with what wrote
// it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/buzzrelay/buzz/conformance/checker"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type fileResult struct {
	File       string              `json:"file"`
	OK         bool                `json:"ok"`
	Steps      int                 `json:"steps"`
	Violations []checker.Violation `json:"violations"`
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("buzzcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	require := fs.String("require", "", "comma-separated actions that must appear in every trace (known: "+strings.Join(checker.Actions(), ", ")+")")
	asJSON := fs.Bool("json", false, "print one JSON object per trace instead of text")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: buzzcheck [-require a,b] [-json] trace.jsonl|- ...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	var opts []checker.Option
	if *require != "" {
		opts = append(opts, checker.WithRequired(strings.Split(*require, ",")...))
	}
	ck, err := checker.New(opts...)
	if err != nil {
		fmt.Fprintln(stderr, "buzzcheck:", err)
		return 2
	}
	status := 0
	enc := json.NewEncoder(stdout)
	for _, name := range fs.Args() {
		rep, err := checkFile(ck, name, stdin)
		if err != nil {
			fmt.Fprintln(stderr, "buzzcheck:", err)
			return 2
		}
		if !rep.OK() {
			status = 1
		}
		if *asJSON {
			res := fileResult{File: name, OK: rep.OK(), Steps: rep.Steps, Violations: rep.Violations}
			if res.Violations == nil {
				res.Violations = []checker.Violation{}
			}
			if err := enc.Encode(res); err != nil {
				fmt.Fprintln(stderr, "buzzcheck:", err)
				return 2
			}
			continue
		}
		if rep.OK() {
			fmt.Fprintf(stdout, "%s: ok (%d steps)\n", name, rep.Steps)
			continue
		}
		fmt.Fprintf(stdout, "%s: BREACH (%d steps, %d violations: %v)\n", name, rep.Steps, len(rep.Violations), rep.Verdicts())
		for _, v := range rep.Violations {
			fmt.Fprintf(stdout, "  %s\n", v)
		}
	}
	return status
}

func checkFile(ck *checker.Checker, name string, stdin io.Reader) (checker.Report, error) {
	if name == "-" {
		return ck.Check(stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return checker.Report{}, err
	}
	defer f.Close()
	return ck.Check(f)
}
