package clustertest_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cluster/clustertest"
)

// echo serves lines back on a loopback port.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := c.Write(append(sc.Bytes(), '\n')); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, line string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// A cut ends the connections through the proxy and refuses new ones; a mend lets new ones through.
func TestAProxyCutsAndMendsItsLink(t *testing.T) {
	p := clustertest.NewProxy(t, echo(t))
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	got, err := roundTrip(c, "hello")
	require.NoError(t, err)
	require.Equal(t, "hello\n", got)

	p.Cut()
	_, err = roundTrip(c, "after the cut")
	require.Error(t, err, "a connection through a cut link ends")
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		_, err = roundTrip(c2, "new")
		_ = c2.Close()
	}
	require.Error(t, err, "a new connection through a cut link is refused")

	p.Mend()
	c3, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c3.Close()
	got, err = roundTrip(c3, "mended")
	require.NoError(t, err)
	require.Equal(t, "mended\n", got)
}
