package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/heraldhq/herald/http/admin"
	"github.com/heraldhq/herald/persistence"
)

const checkUsage = "usage: herald check --data DIR     (checks DIR/herald.db with no server running on it)\n" +
	"       herald check --file FILE    (checks a database file, such as a backup)"

// checkError ends `herald check` with an exit status of its own: 1 when the file is damaged, 3
// when it could not be checked (a server holds it, no such file). docs/operations.md, Damaged
// data.
type checkError struct {
	msg  string
	code int
}

func (e *checkError) Error() string { return e.msg }
func (e *checkError) ExitCode() int { return e.code }

// cmdCheck is `herald check`: it reads the database file without writing to it and prints what
// it holds and every problem found (persistence.CheckFile: the file's structure page by page,
// bbolt's consistency check, Herald's cross-checks of indexes against records).
func cmdCheck(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	dir := fs.String("data", envOr("HERALD_DATA_DIR", ""), "data directory")
	file := fs.String("file", "", "a database file (such as a backup) instead of DIR/herald.db")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return &usageError{fmt.Sprintf("%v\n%s", err, checkUsage)}
	}
	if len(pos) > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q\n%s", pos[0], checkUsage)}
	}
	path := *file
	if path == "" {
		if *dir == "" {
			return &usageError{"--data DIR or --file FILE is required\n" + checkUsage}
		}
		path = filepath.Join(*dir, persistence.FileName)
		if c := admin.Dial(*dir); c != nil {
			return &checkError{code: 3, msg: fmt.Sprintf("a herald server is running on %s and holds its database file; "+
				"herald check reads the file with no server running. Stop the server and run the command again, or check a backup taken now: "+
				"herald backup --data %s --out FILE, then herald check --file FILE", *dir, *dir)}
		}
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	r, err := persistence.CheckFile(path, 2*time.Second)
	switch {
	case errors.Is(err, persistence.ErrLocked):
		return &checkError{code: 3, msg: fmt.Sprintf("%s is locked by another process (a herald server, or a command running on it); "+
			"herald check reads the file with no other process writing it. Stop that process and run the command again", path)}
	case errors.Is(err, os.ErrNotExist):
		return &checkError{code: 3, msg: fmt.Sprintf("there is no database file at %s", path)}
	case err != nil:
		return &checkError{code: 3, msg: err.Error()}
	}
	printReport(out, r)
	if !r.Sound() {
		n := len(r.Problems) + r.More
		return &checkError{code: 1, msg: fmt.Sprintf("the database file %s is damaged: %d problem%s found (listed above). "+
			"Restore the latest backup (docs/operations.md, \"Restoring a backup\")", path, n, plural(n))}
	}
	return nil
}

// printReport prints a check's report for a reader.
func printReport(w io.Writer, r *persistence.Report) {
	fmt.Fprintf(w, "database file  %s\n", r.Path)
	fmt.Fprintf(w, "size           %s", byteSize(r.Size))
	if r.PageSize > 0 {
		fmt.Fprintf(w, ": %s pages of %d bytes in use, %s of them free", thousands(int(r.Pages)), r.PageSize, thousands(r.FreePages))
	}
	fmt.Fprintln(w)
	if r.PageSize > 0 {
		fmt.Fprintf(w, "transaction    %d\n", r.TxID)
	}
	if r.Schema > 0 {
		fmt.Fprintf(w, "layout         version %d\n", r.Schema)
	}
	if len(r.Buckets) > 0 {
		keys := 0
		for _, b := range r.Buckets {
			keys += b.Keys
		}
		fmt.Fprintf(w, "buckets        %d, %s keys\n", len(r.Buckets), thousands(keys))
		for _, b := range r.Buckets {
			fmt.Fprintf(w, "  %-22s %12s\n", b.Name, thousands(b.Keys))
		}
	}
	for i, c := range r.Checks {
		label := ""
		if i == 0 {
			label = "checked"
		}
		fmt.Fprintf(w, "%-14s %s\n", label, c)
	}
	if r.Sound() {
		fmt.Fprintln(w, "result         sound: no problems found")
		return
	}
	n := len(r.Problems) + r.More
	fmt.Fprintf(w, "result         damaged: %d problem%s\n", n, plural(n))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
	if r.More > 0 {
		fmt.Fprintf(w, "  - and %d more\n", r.More)
	}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB (%s bytes)", float64(n)/(1<<30), thousands(int(n)))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB (%s bytes)", float64(n)/(1<<20), thousands(int(n)))
	}
	return thousands(int(n)) + " bytes"
}

// thousands prints n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
