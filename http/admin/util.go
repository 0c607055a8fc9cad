package admin

import (
	"bytes"
	"io"
	"syscall"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func umask(m int) int { return syscall.Umask(m) }
