package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository root, relative to this package.
const repoRoot = "../.."

// TestRelativeLinks checks every relative link of README.md, SECURITY.md
// and docs/*.md: the file or directory it names exists, and its #anchor,
// if any, is a heading of that Markdown file (GitHub's anchor for it).
func TestRelativeLinks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "SECURITY.md")}, files...)
	if len(files) < 3 {
		t.Fatalf("found %d documents, want README.md, SECURITY.md and docs/*.md", len(files))
	}
	checked := 0
	for _, f := range files {
		n, problems, err := checkFile(f, os.ReadFile)
		if err != nil {
			t.Fatal(err)
		}
		checked += n
		for _, p := range problems {
			t.Errorf("%s: %s", strings.TrimPrefix(f, repoRoot+"/"), p)
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the checker reads nothing")
	}
}

// TestCheckerFindsBrokenLinks runs the checker on documents with known
// faults, so TestRelativeLinks cannot pass by reading nothing.
func TestCheckerFindsBrokenLinks(t *testing.T) {
	docs := map[string]string{
		"a.md": "# Title\n\n## Some Section: with, punctuation\n\n" +
			"[ok](b.md) [ok anchor](b.md#second-heading) [ok local](#some-section-with-punctuation)\n" +
			"[missing file](c.md) [missing anchor](b.md#nowhere) [bad local](#title-2)\n" +
			"`[in code](gone.md)` [web](https://example.com/x.md)\n```\n[in a fence](gone.md)\n```\n",
		"b.md": "# First\n\n## Second heading\n",
	}
	read := func(name string) ([]byte, error) {
		if s, ok := docs[filepath.Base(name)]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	n, problems, err := checkFile("a.md", read)
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("checked %d links, want 6 (code, fences and web links are skipped)", n)
	}
	want := []string{`"c.md"`, `"b.md#nowhere"`, `"#title-2"`}
	if len(problems) != len(want) {
		t.Fatalf("problems %q, want one for each of %v", problems, want)
	}
	for i, w := range want {
		if !strings.Contains(problems[i], w) {
			t.Errorf("problem %d = %q, want it to name %s", i, problems[i], w)
		}
	}
}

// TestTablesNotSplit refuses a Markdown table interrupted by a blank line:
// the rows after it would render as a paragraph of pipes.
func TestTablesNotSplit(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "SECURITY.md")}, files...)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range splitTables(string(raw)) {
			t.Errorf("%s:%d: a table row after a blank line that follows a table", strings.TrimPrefix(f, repoRoot+"/"), line)
		}
	}
	if got := splitTables("| a |\n| --- |\n| 1 |\n\n| 2 |\n\n| b |\n| --- |\n"); len(got) != 1 || got[0] != 5 {
		t.Errorf("splitTables found lines %v in a fixture with one split at line 5", got)
	}
}

// splitTables returns the 1-based lines where a table row follows a blank
// line that follows a table row, unless it starts a new table (its next
// line is a delimiter row).
func splitTables(md string) []int {
	lines := strings.Split(md, "\n")
	row := func(i int) bool {
		return i >= 0 && i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|")
	}
	delim := regexp.MustCompile(`^\s*\|[\s:|-]+\|\s*$`)
	var out []int
	for i := 2; i < len(lines); i++ {
		if row(i) && strings.TrimSpace(lines[i-1]) == "" && row(i-2) && !(i+1 < len(lines) && delim.MatchString(lines[i+1])) {
			out = append(out, i+1)
		}
	}
	return out
}

var (
	fence      = regexp.MustCompile("(?m)^ {0,3}(```|~~~)")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	link       = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	heading    = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#* *$`)
)

// checkFile returns how many relative links name checks and what is wrong
// with them. read reads a file (os.ReadFile, or a fixture).
func checkFile(name string, read func(string) ([]byte, error)) (int, []string, error) {
	raw, err := read(name)
	if err != nil {
		return 0, nil, err
	}
	var problems []string
	checked := 0
	for _, target := range links(string(raw)) {
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		checked++
		path, anchor, _ := strings.Cut(target, "#")
		file := name
		if path != "" {
			file = filepath.Join(filepath.Dir(name), filepath.FromSlash(path))
			if _, err := os.Stat(file); err != nil {
				if _, rerr := read(file); rerr != nil {
					problems = append(problems, fmt.Sprintf("link %q: no such file or directory", target))
					continue
				}
			}
		}
		if anchor == "" {
			continue
		}
		if !strings.HasSuffix(file, ".md") {
			problems = append(problems, fmt.Sprintf("link %q: an anchor into a file that is not Markdown", target))
			continue
		}
		body, err := read(file)
		if err != nil {
			return 0, nil, err
		}
		if !anchors(string(body))[anchor] {
			problems = append(problems, fmt.Sprintf("link %q: %s has no heading with that anchor", target, filepath.Base(file)))
		}
	}
	return checked, problems, nil
}

// links returns the targets of the inline links of a Markdown text,
// outside fenced code blocks and inline code.
func links(md string) []string {
	var out []string
	for i, part := range fence.Split(md, -1) {
		if i%2 == 1 {
			continue // inside a fence
		}
		part = inlineCode.ReplaceAllString(part, "")
		for _, m := range link.FindAllStringSubmatch(part, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// anchors returns the anchors GitHub gives the headings of a Markdown
// text: lower case, inline code and link syntax unwrapped, everything but
// letters, digits, spaces, hyphens and underscores dropped, spaces made
// hyphens; a repeated anchor gets -1, -2, … appended.
func anchors(md string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for i, part := range fence.Split(md, -1) {
		if i%2 == 1 {
			continue
		}
		for _, m := range heading.FindAllStringSubmatch(part, -1) {
			text := link.ReplaceAllStringFunc(m[1], func(l string) string { return l[1:strings.Index(l, "](")] })
			var b strings.Builder
			for _, r := range strings.ToLower(text) {
				switch {
				case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
					b.WriteRune(r)
				case r == ' ':
					b.WriteByte('-')
				}
			}
			a := b.String()
			if n := seen[a]; n > 0 {
				out[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				out[a] = true
			}
			seen[a]++
		}
	}
	return out
}
