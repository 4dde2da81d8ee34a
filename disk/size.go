package disk

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are the units ParseSize takes: binary with an i, decimal without.
var sizeUnits = []struct {
	suffix string
	factor float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// SizeWord says what ParseSize takes, for error messages.
const SizeWord = "a size like 512MiB, 2GiB or 5GB (KiB, MiB, GiB, TiB count 1024s; KB, MB, GB, TB 1000s)"

// ParseSize reads a size of bytes: a number with one of sizeUnits ("2GiB", "1.5 GB") or
// without (bytes).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	factor := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, factor = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.factor
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*factor > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is not %s", s, SizeWord)
	}
	return int64(v * factor), nil
}
