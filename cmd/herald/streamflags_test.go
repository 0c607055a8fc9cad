package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A bad --max-streams-per-user is refused before anything starts (no data directory is created).
func TestServeRefusesBadMaxStreamsPerUser(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, v := range []string{"0", "-2", "many"} {
		var stderr bytes.Buffer
		err := cmdServe([]string{"--data", dir, "--addr", "127.0.0.1:0", "--max-streams-per-user", v}, &stderr)
		require.ErrorContains(t, err, "--max-streams-per-user", v)
		require.NoDirExists(t, dir)
	}
}
