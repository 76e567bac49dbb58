package access

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPermissionFlagsHaveTheReferenceValuesAndAllStopsAtExport(t *testing.T) {
	// The wire values of the reference [Flags] enum.
	want := map[Permission]uint32{
		Read: 1, Create: 2, Update: 4, Delete: 8, Comment: 16, Execute: 32,
		Thread: 64, Api: 128, Export: 256, Sync: 512, Compile: 1024, All: 511,
	}
	for p, v := range want {
		assert.Equal(t, v, uint32(p), p.String())
	}
	assert.True(t, All.Has(Read|Export))
	assert.False(t, All.Has(Sync), "Sync is granted only explicitly")
	assert.False(t, All.Has(Compile), "Compile is granted only explicitly")
}

func TestPermissionStringNamesTheFlags(t *testing.T) {
	cases := []struct {
		p    Permission
		want string
	}{
		{None, "None"},
		{Read, "Read"},
		{Read | Comment | Api, "Read|Comment|Api"},
		{All, "All"},
		{All | Compile, "All|Compile"},
		{Sync | Compile, "Sync|Compile"},
		{Read | 1<<20, "Read|0x100000"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.p.String())
	}
}

func TestHasNeedsEveryRequestedFlag(t *testing.T) {
	assert.True(t, (Read | Update).Has(Read))
	assert.True(t, (Read | Update).Has(Read|Update))
	assert.False(t, Read.Has(Read|Update), "one of two is not enough")
	assert.True(t, Read.Has(None))
}
