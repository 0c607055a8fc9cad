package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// postmaster is the process id of the PostgreSQL server of --store when it runs on this machine
// and its data directory can be read (the bench runs as its owner or as root), 0 otherwise (and
// on bbolt, url "").
func postmaster(url string) int {
	if url == "" {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0
	}
	defer conn.Close(context.Background())
	var dir string
	if err := conn.QueryRow(ctx, "SHOW data_directory").Scan(&dir); err != nil {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	pid, err := strconv.Atoi(strings.TrimSpace(string(line)))
	if err != nil || processCPU(pid) == 0 {
		return 0
	}
	return pid
}

// serverTreeCPU is the CPU time used by the process pm and every process it started, whether
// still running or already ended and reaped (Linux; 0 elsewhere). For PostgreSQL that is the
// whole server: the connections' backends, autovacuum's workers, the WAL writer, the
// checkpointer. The difference of two readings is what the server used between them, a process
// that ended in between included (its whole time is then in pm's reaped children, less what the
// first reading counted of it while it ran).
func serverTreeCPU(pm int) time.Duration {
	if pm == 0 {
		return 0
	}
	st, ok := readProcStat(pm)
	if !ok {
		return 0
	}
	total := st.own + st.reaped
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == pm {
			continue
		}
		if child, ok := readProcStat(pid); ok && child.ppid == pm {
			total += child.own
		}
	}
	return total
}
