package wrap

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// errLine is the shape of every template error.
var errLine = regexp.MustCompile(`^f\.w:[0-9]+: `)

// FuzzTemplate checks that no template makes the engine panic, that every
// failure is one "f.w:LINE: message" line and that nothing is written on
// failure. Seeds live in testdata/fuzz/FuzzTemplate.
func FuzzTemplate(f *testing.F) {
	funcs := testFuncs(f)
	f.Add("{{fnall f}}{{callfn}}{{endfnall}}", uint8(0))
	f.Add("{{foreachfn f MPI_Send}}{{sub {{types}} '(\\w+)' '<\\1>'}} {{2}}{{endforeachfn}}", uint8(3))
	f.Add("/* {{x}} */ \"//\" {{list 'a b' {{list c}}}}", uint8(8))
	f.Add("{{fn f MPI_Send MPI_Wtime}}{{vardecl 'int *' x y[2]}}{{x}}{{callfn}}{{endfn}}", uint8(1))
	defer func(o, v, s int) { maxOutput, maxValueBytes, maxSteps = o, v, s }(maxOutput, maxValueBytes, maxSteps)
	maxOutput, maxValueBytes, maxSteps = 1<<22, 1<<16, 1<<18
	f.Fuzz(func(t *testing.T, tmpl string, flags uint8) {
		opts := Options{
			Fortran:               flags&1 != 0,
			Guards:                flags&2 != 0,
			NoDeprecationWarnings: flags&4 != 0,
			NoFrontMatter:         flags&8 != 0,
			SkipUnknown:           flags&16 != 0,
			HeaderNames:           flags&32 != 0,
		}
		var b bytes.Buffer
		err := Generate(&b, funcs, []Input{{Name: "f.w", Text: tmpl}}, opts)
		if err == nil {
			return
		}
		msg := err.Error()
		if !errLine.MatchString(msg) {
			t.Errorf("error %q is not of the form f.w:LINE: message", msg)
		}
		if strings.ContainsAny(msg, "\r\n") {
			t.Errorf("multi-line error %q", msg)
		}
		if b.Len() != 0 {
			t.Errorf("output written despite error %q", msg)
		}
	})
}
