package session

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Reserve counts an attempt in flight in the same step as its check: the allowance is shared
// between failures and attempts whose outcome is not known, a success gives back its own slot of
// the address (not the earlier failures) and forgets the e-mail's failures, and a released
// attempt counts for nothing.
func TestReserveCountsAttemptsInFlight(t *testing.T) {
	t.Parallel()
	now := time.Now()
	th := NewThrottle(ThrottleConfig{EmailFailures: 3, AddressFailures: 5, AddressInFlight: 100}, func() time.Time { return now })

	// The e-mail's 3: three in flight, the fourth is refused for a second.
	var rs []*Reservation
	for range 3 {
		r, wait := th.Reserve("a@example.com", "addr")
		require.Zero(t, wait)
		rs = append(rs, r)
	}
	r, wait := th.Reserve("a@example.com", "addr")
	require.Nil(t, r)
	require.Equal(t, InFlightWait, wait)
	// Two fail, one succeeds: the e-mail's failures are forgotten, the address keeps 2.
	rs[0].Fail()
	rs[1].Fail()
	rs[2].Succeed()
	rs[2].Fail() // told twice: the first outcome stands
	require.Nil(t, th.email.get("a@example.com"))
	require.Equal(t, 2, th.addr.get("addr").count)
	require.Zero(t, th.addr.get("addr").pending)

	// The address has 3 left: 3 in flight across e-mails, the next refused.
	rs = rs[:0]
	for i := range 3 {
		r, wait := th.Reserve(string(rune('b'+i))+"@example.com", "addr")
		require.Zero(t, wait)
		rs = append(rs, r)
	}
	r, wait = th.Reserve("z@example.com", "addr")
	require.Nil(t, r)
	require.Equal(t, InFlightWait, wait)
	rs[0].Release() // never checked: its slot comes back
	r, wait = th.Reserve("z@example.com", "addr")
	require.Zero(t, wait)
	rs[0] = r
	for _, r := range rs {
		r.Fail()
	}
	// 5 failures: a refusal window of a minute.
	r, wait = th.Reserve("y@example.com", "addr")
	require.Nil(t, r)
	require.Equal(t, time.Minute, wait)

	// Past the window, one attempt at a time: its failure opens the next, twice as long.
	now = now.Add(61 * time.Second)
	r, wait = th.Reserve("y@example.com", "addr")
	require.Zero(t, wait)
	r2, wait := th.Reserve("x@example.com", "addr")
	require.Nil(t, r2)
	require.Equal(t, InFlightWait, wait)
	r.Fail()
	_, wait = th.Reserve("y@example.com", "addr")
	require.Equal(t, 2*time.Minute, wait)
}

// One address has at most AddressInFlight attempts in flight, even with allowance left.
func TestReserveBoundsAnAddressInFlight(t *testing.T) {
	t.Parallel()
	now := time.Now()
	th := NewThrottle(ThrottleConfig{}, func() time.Time { return now })
	for range 4 {
		_, wait := th.Reserve("", "addr")
		require.Zero(t, wait)
	}
	_, wait := th.Reserve("", "addr")
	require.Equal(t, InFlightWait, wait)
	_, wait = th.Reserve("", "another addr")
	require.Zero(t, wait, "other addresses are not held by it")
}

// The sweep keeps an entry with attempts in flight, whatever its age.
func TestSweepKeepsAttemptsInFlight(t *testing.T) {
	t.Parallel()
	now := time.Now()
	th := NewThrottle(ThrottleConfig{}, func() time.Time { return now })
	r, _ := th.Reserve("a@example.com", "addr")
	now = now.Add(2 * time.Hour)
	th.Sweep()
	require.Equal(t, 2, th.Len())
	r.Fail()
	require.Equal(t, 1, th.addr.get("addr").count)
	now = now.Add(2 * time.Hour)
	th.Sweep()
	require.Zero(t, th.Len())
}

// The throttle's memory is bounded: the least recently failed entries are forgotten.
func TestThrottleIsBounded(t *testing.T) {
	t.Parallel()
	now := time.Now()
	th := NewThrottle(ThrottleConfig{Capacity: 100}, func() time.Time { return now })
	for i := range 1000 {
		th.Fail("user"+strconv.Itoa(i)+"@example.com", "addr"+strconv.Itoa(i))
	}
	require.Equal(t, 200, th.Len())
	now = now.Add(2 * time.Hour)
	th.Sweep()
	require.Equal(t, 0, th.Len())
}
