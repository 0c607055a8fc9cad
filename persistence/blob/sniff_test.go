package blob_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence/blob"
)

func TestSniff(t *testing.T) {
	t.Parallel()
	classic := append([]byte("\x00\x00\x00\x10moov"), make([]byte, 32)...)
	cases := []struct {
		name     string
		declared string
		head     []byte
		ok       bool
		detected string
	}{
		{"jpeg", "image/jpeg", jpegBytes, true, "image/jpeg"},
		{"png", "image/png", pngBytes, true, "image/png"},
		{"png declared as jpeg", "image/jpeg", pngBytes, false, "image/png"},
		{"jpeg declared as png", "image/png", jpegBytes, false, "image/jpeg"},
		{"mp4", "video/mp4", mp4Bytes, true, "video/mp4"},
		{"quicktime", "video/quicktime", movBytes, true, "video/quicktime"},
		{"quicktime declared as mp4", "video/mp4", movBytes, true, "video/quicktime"},
		{"mp4 declared as quicktime", "video/quicktime", mp4Bytes, true, "video/mp4"},
		{"classic quicktime", "video/quicktime", classic, true, "video/quicktime"},
		{"ELF declared as mp4", "video/mp4", elfBytes, false, "an ELF executable"},
		{"Windows executable declared as mp4", "video/mp4", append([]byte("MZ\x90\x00"), make([]byte, 64)...), false, "a Windows executable"},
		{"script declared as quicktime", "video/quicktime", []byte("#!/bin/sh\nrm -rf /\n"), false, "a script"},
		{"gif declared as png", "image/png", []byte("GIF89a\x01\x00\x01\x00"), false, "image/gif"},
		{"mp4 declared as jpeg", "image/jpeg", mp4Bytes, false, "video/mp4"},
		{"text declared as mp4", "video/mp4", []byte("hello, this is not a video at all"), false, "unknown"},
		{"ftyp box too small", "video/mp4", []byte("\x00\x00\x00\x04ftypmp42\x00\x00\x00\x00"), false, "unknown"},
		{"empty", "image/jpeg", nil, false, "unknown"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.detected, blob.Detect(c.head))
			err := blob.Sniff(c.declared, c.head)
			if c.ok {
				require.NoError(t, err)
				return
			}
			var me *blob.MismatchError
			require.ErrorAs(t, err, &me)
			require.Equal(t, c.declared, me.Declared)
		})
	}
}

func TestKeysAndFilenames(t *testing.T) {
	t.Parallel()
	u := "0190a3b4-0000-7000-8000-000000000001"
	m := "0190a3b4-0000-7000-8000-000000000002"
	require.True(t, blob.ValidKey(blob.Key(u, m+".jpg")))
	for _, bad := range []string{
		"uploads/" + u + "/../" + m + ".jpg", "uploads/" + u + "/" + m + ".exe", "uploads/x/" + m + ".png",
		"/uploads/" + u + "/" + m + ".png", "uploads/" + u + "/" + m + ".png/..", "",
	} {
		require.False(t, blob.ValidKey(bad), bad)
	}
	require.Equal(t, m, blob.MediaIDOf(m+".mov"))
	require.Empty(t, blob.MediaIDOf("../"+m+".mov"))
	require.Empty(t, blob.MediaIDOf(m))

	for _, name := range []string{"", " ", "a/b.jpg", `a\b.jpg`, "..", ".", "bad\x00name.png", "tab\tname.png", "line\u2028sep.png", "del\x7f.png", string(make([]byte, 256)), "\xff\xfe.png"} {
		require.Error(t, blob.CheckFilename("filename", name), "%q", name)
	}
	for _, name := range []string{"photo.jpg", "été à Paris.jpeg", "clip (1).mov", "..hidden.png", "👍.png"} {
		require.NoError(t, blob.CheckFilename("filename", name), "%q", name)
	}
}
