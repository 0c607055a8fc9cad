package actors_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/actors"
)

func TestRecentKeepsTheLastValues(t *testing.T) {
	t.Parallel()
	r := actors.NewRecent[int, string](3)
	for i := 1; i <= 4; i++ {
		r.Put(i, "v")
	}
	_, ok := r.Get(1)
	require.False(t, ok, "the oldest went")
	require.Equal(t, 3, r.Len())
	v, ok := r.Take(3)
	require.True(t, ok)
	require.Equal(t, "v", v)
	_, ok = r.Get(3)
	require.False(t, ok, "taken once")
	// 3 again takes a new slot (2's): the reuse of its old one must not drop it.
	r.Put(3, "w")
	r.Put(5, "v") // reuses the old slot of 3
	v, ok = r.Get(3)
	require.True(t, ok)
	require.Equal(t, "w", v)
	var none *actors.Recent[int, string]
	none.Put(1, "v")
	_, ok = none.Get(1)
	require.False(t, ok)
	require.Equal(t, 0, actors.NewRecent[int, int](0).Len())
}
