package main

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Go samples allocations only for a server whose profiles can be fetched (--debug-addr): without
// one the sampling's stack walks are work nobody reads.
func TestAllocationsSampledOnlyWithADebugListener(t *testing.T) {
	rate := runtime.MemProfileRate
	t.Cleanup(func() { runtime.MemProfileRate = rate })
	require.Positive(t, rate, "Go samples allocations by default")
	sampleAllocations(true)
	require.Equal(t, rate, runtime.MemProfileRate, "kept with --debug-addr")
	sampleAllocations(false)
	require.Zero(t, runtime.MemProfileRate, "off without it")
}

// A server with --debug-addr serves a heap profile with the allocations it sampled at Go's
// default rate.
func TestDebugListenerServesSampledAllocations(t *testing.T) {
	dir := t.TempDir()
	debug := freeAddr(t)
	p := startServer(t, dir, "--sandbox", "--debug-addr", debug)
	key := sandboxKey(t, dir)
	account := firstAccount(t, p, key)
	for i := range 50 {
		status, body := p.request(key, "POST", "/v1/posts", fmt.Sprintf(`{"content":"draft %d: %s","platforms":[%q]}`, i, strings.Repeat("x", 200), account))
		require.Equal(t, 201, status, string(body))
	}
	var first string
	for range 3 { // a collection publishes the samples of the cycle before it
		resp, err := http.Get("http://" + debug + "/debug/pprof/heap?debug=1&gc=1")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		first, _, _ = strings.Cut(string(b), "\n")
	}
	// "heap profile: <in use>: <bytes> [<allocated>: <bytes>] @ heap/<2 × sampling rate>"
	var inUse, inUseBytes, allocs, allocBytes, rate int64
	_, err := fmt.Sscanf(first, "heap profile: %d: %d [%d: %d] @ heap/%d", &inUse, &inUseBytes, &allocs, &allocBytes, &rate)
	require.NoError(t, err, first)
	require.Equal(t, int64(2*512*1024), rate, first)
	require.Positive(t, allocs, first)
}
