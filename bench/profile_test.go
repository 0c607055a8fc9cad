package bench

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Each thread's CPU is read from /proc, and the report names the main thread and sysmon (the
// first thread the runtime starts) and counts a thread started during the phase whole.
func TestThreadReport(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pid := os.Getpid()
	before := readThreads(pid)
	require.NotEmpty(t, before)
	require.Contains(t, before, pid, "the main thread's id is the process's")
	deadline := time.Now().Add(30 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ { // spin some CPU on this thread
		_ = strings.Repeat("x", n%64)
	}
	after := readThreads(pid)
	for tid, a := range after {
		b := before[tid]
		require.GreaterOrEqual(t, a.user+a.syst, b.user+b.syst, "thread %d", tid)
	}

	before = map[int]threadCPU{pid: {tid: pid, name: "herald", user: 10, syst: 5}, pid + 1: {tid: pid + 1, name: "herald", user: 1, runs: 1000}}
	after = map[int]threadCPU{
		pid:     {tid: pid, name: "herald", user: 30, syst: 5},
		pid + 1: {tid: pid + 1, name: "herald", user: 3, syst: 2, runs: 13500},
		pid + 7: {tid: pid + 7, name: "herald", user: 50, syst: 25}, // started during the phase
	}
	r := threadReport(pid, before, after, time.Second)
	lines := strings.Split(strings.TrimSpace(r), "\n")
	require.Len(t, lines, 5, r)
	require.Contains(t, lines[0], "0.99s in all (99% of one core), 3 threads of 3 with CPU")
	require.Regexp(t, `^\s+\d+\s+0\.50\s+0\.25\s+0\.75\s+75\.8%\s+0\s+herald$`, lines[2], "the new thread, most first")
	require.Contains(t, lines[3], "0.20  ")
	require.Contains(t, lines[3], "(main thread)")
	require.Contains(t, lines[4], "0.04  ")
	require.Contains(t, lines[4], "(sysmon")
	require.Contains(t, lines[4], " 12500  ", "its wake-ups per second")
}

// --profile finds the server's pprof address among its flags, in either form.
func TestDebugAddrOf(t *testing.T) {
	require.Equal(t, "127.0.0.1:7000", debugAddrOf([]string{"--store", "x", "--debug-addr", "127.0.0.1:7000"}))
	require.Equal(t, "127.0.0.1:7001", debugAddrOf([]string{"--debug-addr=127.0.0.1:7001"}))
	require.Empty(t, debugAddrOf([]string{"--debug-addr"}))
}
