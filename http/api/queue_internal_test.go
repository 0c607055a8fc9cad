package api

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
)

func TestNextFreeSlot(t *testing.T) {
	t.Parallel()
	paris := &persistence.Queue{Timezone: "Europe/Paris", Slots: []persistence.QueueSlot{{Weekday: "monday", Time: "09:00"}, {Weekday: "wednesday", Time: "02:30"}}}
	utc := func(s string) time.Time {
		at, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return at
	}
	for _, tc := range []struct {
		name  string
		q     *persistence.Queue
		now   string
		taken []string
		want  string // "" for none
	}{
		// 2026-11-27 is a Friday; Paris is UTC+1 in winter.
		{"next monday", paris, "2026-11-27T08:00:00Z", nil, "2026-11-30T08:00:00Z"},
		{"later the same day", paris, "2026-11-30T07:59:00Z", nil, "2026-11-30T08:00:00Z"},
		{"the slot now has passed", paris, "2026-11-30T08:00:00Z", nil, "2026-12-02T01:30:00Z"},
		{"a taken slot is skipped", paris, "2026-11-27T08:00:00Z", []string{"2026-11-30T08:00:00Z"}, "2026-12-02T01:30:00Z"},
		{"summer time", paris, "2027-06-01T00:00:00Z", nil, "2027-06-02T00:30:00Z"},
		// 2027-03-28 02:30 does not exist in Paris (clocks go 02:00 → 03:00): a Sunday, so take
		// a queue with a Sunday slot in the gap, moved forward by the gap.
		{"in the daylight-saving gap", &persistence.Queue{Timezone: "Europe/Paris", Slots: []persistence.QueueSlot{{Weekday: "sunday", Time: "02:30"}}},
			"2027-03-27T12:00:00Z", nil, "2027-03-28T01:30:00Z"},
		{"every slot taken for a year", &persistence.Queue{Timezone: "UTC", Slots: []persistence.QueueSlot{{Weekday: "friday", Time: "10:00"}}},
			"2026-11-27T11:00:00Z", fridays("2026-12-04T10:00:00Z", 53), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			taken := map[int64]bool{}
			for _, s := range tc.taken {
				taken[utc(s).Unix()] = true
			}
			got, ok := NextFreeSlot(tc.q, utc(tc.now), taken)
			if tc.want == "" {
				require.False(t, ok, "got %s", got)
				return
			}
			require.True(t, ok)
			require.Equal(t, utc(tc.want), got.UTC())
		})
	}
}

// fridays are n weekly times from first.
func fridays(first string, n int) []string {
	at, _ := time.Parse(time.RFC3339, first)
	var out []string
	for range n {
		out = append(out, at.Format(time.RFC3339))
		at = at.AddDate(0, 0, 7)
	}
	return out
}
