package persistence

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// EncodeJobEvents writes what encoding/json writes for a change's events, byte for byte, so
// that a timeline reads back the same whichever encoded it; a time encoding/json refuses is
// refused the same way.
func TestEncodeJobEventsMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 27, 9, 59, 1, 123456789, time.UTC)
	cases := [][]JobEvent{
		nil,
		{},
		{{Target: 0, Phase: PhaseUploading, Message: "queued", At: at}},
		{{Target: 2, Phase: EventResolved, Message: "the outcome was unknown; <found> & \"kept\"\u2028", At: at.In(time.FixedZone("x", 5*3600+1800))},
			{Target: 2, Phase: PhaseSuccess, Message: "published \xff", At: at.Truncate(time.Second)}},
		{{Target: -1, Message: "", At: time.Time{}}},
	}
	for _, s := range awkward {
		cases = append(cases, []JobEvent{{Target: 1, Phase: s, Message: s, At: at}})
	}
	for _, evs := range cases {
		want, err := json.Marshal(evs)
		require.NoError(t, err)
		got, err := EncodeJobEvents(evs)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		var back []JobEvent
		require.NoError(t, Decode(got, &back))
	}
	_, err := EncodeJobEvents([]JobEvent{{At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}})
	require.Error(t, err)
}
