// Package doccheck holds the tests that keep the repository's Markdown
// documentation navigable: every relative link in README.md, SECURITY.md and docs/*.md
// names a file or directory that exists, and every #anchor a heading of
// the file it points into. It has no code of its own.
package doccheck
