package bench

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// busy is a shell that spends CPU for a moment and exits.
const busy = `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done`

// A process tree's CPU counts its children, running and ended: a child that ran to its end
// between two readings, and one still running at the second.
func TestServerTreeCPUCountsChildrenRunningAndEnded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("read from /proc")
	}
	self := os.Getpid()
	before := serverTreeCPU(self)
	ended := exec.Command("sh", "-c", busy)
	require.NoError(t, ended.Run())
	endedCPU := ended.ProcessState.UserTime() + ended.ProcessState.SystemTime()
	require.Positive(t, endedCPU)
	afterEnded := serverTreeCPU(self)
	require.GreaterOrEqual(t, afterEnded-before, endedCPU-10*time.Millisecond, "an ended child's time is in its parent's reaped children")

	running := exec.Command("sh", "-c", busy+"; sleep 60")
	require.NoError(t, running.Start())
	t.Cleanup(func() { _ = running.Process.Kill(); _ = running.Wait() })
	require.Eventually(t, func() bool { return processCPU(running.Process.Pid) >= endedCPU/2 }, 30*time.Second, 10*time.Millisecond)
	child := processCPU(running.Process.Pid) // read first: it is still growing
	require.GreaterOrEqual(t, serverTreeCPU(self)-afterEnded, child, "a running child's time is counted")
	require.Zero(t, serverTreeCPU(0), "no server")
}
