package main

import (
	"bytes"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func parseMediaFlags(t *testing.T, args ...string) (*mediaFlags, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f := addMediaFlags(fs)
	_, err := parseFlags(fs, args)
	return f, err
}

func TestMediaFlags(t *testing.T) {
	f, err := parseMediaFlags(t)
	require.NoError(t, err)
	c, err := f.config()
	require.NoError(t, err)
	require.Equal(t, int64(50<<20), c.MaxImageBytes)
	require.Equal(t, int64(500<<20), c.MaxVideoBytes)
	require.Equal(t, 24*time.Hour, c.URLTTL)
	require.Nil(t, c.S3, "local storage by default")
	require.Equal(t, int64(64<<10), c.UploadMinRate)
	require.Equal(t, int64(1<<30), c.MinFreeBytes)
	f, err = parseMediaFlags(t, "--media-upload-min-rate", "1000", "--media-min-free-bytes", "-1")
	require.NoError(t, err)
	c, err = f.config()
	require.NoError(t, err)
	require.Equal(t, int64(1000), c.UploadMinRate)
	require.Equal(t, int64(-1), c.MinFreeBytes)

	f, err = parseMediaFlags(t, "--s3-endpoint", "http://127.0.0.1:7070", "--s3-bucket", "media", "--s3-region", "us-east-1",
		"--s3-access-key", "a", "--s3-secret-key", "s", "--s3-path-style", "true", "--s3-public-endpoint", "https://media.example.com",
		"--media-max-video-bytes", "1000", "--media-url-ttl", "2h")
	require.NoError(t, err)
	c, err = f.config()
	require.NoError(t, err)
	require.NotNil(t, c.S3)
	require.Equal(t, "https://media.example.com", c.S3.PublicEndpoint)
	require.True(t, c.S3.PathStyle)
	require.Equal(t, int64(1000), c.MaxVideoBytes)
	require.Equal(t, 2*time.Hour, c.URLTTL)

	for _, args := range [][]string{
		{"--media-max-image-bytes", "0"},
		{"--media-max-video-bytes", "lots"},
		{"--media-url-ttl", "5s"},
		{"--media-upload-min-rate", "0"},
		{"--media-min-free-bytes", "-2"},
		{"--media-min-free-bytes", "1GiB"},
		{"--media-url-ttl", "forever"},
		{"--s3-bucket", "media"},
		{"--s3-endpoint", "http://127.0.0.1:7070", "--s3-bucket", "media"},
		{"--s3-endpoint", "http://127.0.0.1:7070", "--s3-bucket", "b", "--s3-region", "r", "--s3-access-key", "a", "--s3-secret-key", "s", "--s3-path-style", "maybe"},
	} {
		f, err := parseMediaFlags(t, args...)
		require.NoError(t, err)
		_, err = f.config()
		require.Error(t, err, "%v", args)
	}
}

// Bad serve flags are refused before anything starts (no data directory is created).
func TestServeRefusesBadAccountConcurrency(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, v := range []string{"0", "-3", "many", "10001"} {
		var stderr bytes.Buffer
		err := cmdServe([]string{"--data", dir, "--addr", "127.0.0.1:0", "--account-concurrency", v}, &stderr)
		require.ErrorContains(t, err, "--account-concurrency", v)
		require.NoDirExists(t, dir)
	}
}
