package mcpmsg

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMembers(t *testing.T) {
	many := func(last string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range 12 {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		return b.String() + `"` + last + `":0}`
	}
	var manyWant []string
	for i := range 12 {
		manyWant = append(manyWant, fmt.Sprintf("k%d=%d", i, i))
	}
	manyWant = append(manyWant, "k12=0")
	for _, tt := range []struct {
		name, obj string
		want      []string // key=value, in order
		err       error
	}{
		{"members in place", ` {"id" : 1, "params":{"a":[1,{"b":2}]}} `, []string{"id=1", `params={"a":[1,{"b":2}]}`}, nil},
		{"escaped key decoded", `{"\u0069d":"x"}`, []string{`id="x"`}, nil},
		{"empty", `{}`, nil, nil},
		{"a key twice", `{"id":1,"id":2}`, nil, ErrDuplicateMember},
		{"a key twice, once escaped", `{"id":1,"\u0069d":2}`, nil, ErrDuplicateMember},
		{"a key twice among many", many("k3"), nil, ErrDuplicateMember},
		{"many keys once each", many("k12"), manyWant, nil},
		{"nested duplicates are the value's", `{"a":{"b":1,"b":2}}`, []string{`a={"b":1,"b":2}`}, nil},
		{"not an object", `[1]`, nil, ErrInvalidRequest},
		{"null", `null`, nil, ErrInvalidRequest},
		{"not JSON", `{"a":1,}`, nil, ErrParse},
		{"trailing bytes", `{"a":1} x`, nil, ErrParse},
		{"empty input", ``, nil, ErrParse},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := Members([]byte(tt.obj), func(key []byte, s, e int) error {
				got = append(got, string(key)+"="+tt.obj[s:e])
				return nil
			})
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if tt.err == nil && !cmp.Equal(tt.want, got) {
				t.Errorf("members (-want +got):\n%s", cmp.Diff(tt.want, got))
			}
		})
	}
}

func TestString(t *testing.T) {
	for raw, want := range map[string]string{`"tools/call"`: "tools/call", `"a\u00e9\n"`: "aé\n", `""`: ""} {
		if got, ok := String([]byte(raw)); !ok || got != want {
			t.Errorf("String(%s) = %q, %v; want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`1`, `null`, `"open`, ``, `{}`} {
		if got, ok := String([]byte(raw)); ok {
			t.Errorf("String(%s) = %q, want not a string", raw, got)
		}
	}
}
