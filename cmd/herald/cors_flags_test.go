package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A --cors-origins entry that is no origin is refused before anything starts.
func TestServeRefusesBadCORSOrigins(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, v := range []string{"host.example", "https://host.example/path", "ftp://host.example", "https://ok.example,https://"} {
		var stderr bytes.Buffer
		err := cmdServe([]string{"--data", dir, "--addr", "127.0.0.1:0", "--cors-origins", v}, &stderr)
		require.ErrorContains(t, err, "--cors-origins", v)
		require.NoDirExists(t, dir)
	}
}
