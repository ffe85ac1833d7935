package postgres

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/ploti-replica/ploti-replica/internal/storagetest"
)

// jsonCols is a column of each type a watched dataset's rows carry.
var jsonCols = storagetest.JSONCols

func TestAppendDecimal(t *testing.T) {
	for _, s := range []string{"0", "0.00", "-0.50", "1", "12345678901234567890.12", "-7", "0.0001", "10000", "100000000.000000001",
		"99999999999999999999999999999999999.99", "-99999999999999999999999999999999999.99", "-0.000000001", "1.00000", "12345.67"} {
		intPart, frac, _ := strings.Cut(s, ".")
		v, ok := new(big.Int).SetString(intPart+frac, 10)
		if !ok {
			t.Fatal(s)
		}
		// hi:lo, v's 128 bits in two's complement, as DuckDB's HUGEINT.
		u := new(big.Int).And(v, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1)))
		lo := new(big.Int).And(u, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
		hi := new(big.Int).Rsh(u, 64).Uint64()
		b := appendDecimal(nil, hi, lo, uint8(len(frac)))
		want := s
		if strings.Trim(want, "-0.") == "" {
			want = strings.TrimPrefix(want, "-") // PostgreSQL has no negative zero
		}
		if got := decodeNumeric(b); got != want {
			t.Errorf("%s: decoded %s", s, got)
		}
	}
}

// decodeNumeric reads numeric's binary format back as text, as
// PostgreSQL's numeric_out would.
func decodeNumeric(b []byte) string {
	u16 := func(i int) int { return int(b[2*i])<<8 | int(b[2*i+1]) }
	nd, weight, sign, dscale := u16(0), int(int16(u16(1))), u16(2), u16(3)
	var ip, fp strings.Builder
	for i := 0; i <= weight; i++ {
		d := 0
		if i < nd {
			d = u16(4 + i)
		}
		if ip.Len() == 0 {
			if d != 0 {
				fmt.Fprintf(&ip, "%d", d)
			}
		} else {
			fmt.Fprintf(&ip, "%04d", d)
		}
	}
	if ip.Len() == 0 {
		ip.WriteString("0")
	}
	for i := weight + 1; fp.Len() < dscale; i++ {
		d := 0
		if i >= 0 && i < nd {
			d = u16(4 + i)
		}
		fmt.Fprintf(&fp, "%04d", d)
	}
	s := ip.String()
	if dscale > 0 {
		s += "." + fp.String()[:dscale]
	}
	if sign == 0x4000 {
		s = "-" + s
	}
	return s
}
