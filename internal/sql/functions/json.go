package functions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/weirproject/weir/internal/sql/types"
)

// JSON values are decoded preserving key order (Flink's Jackson nodes do),
// so JSON_QUERY returns objects as they were written.

type jsonObject struct {
	keys []string
	vals []any
}

// jsonNull is a JSON null inside a document (distinct from "no value").
type jsonNullT struct{}

var jsonNull = jsonNullT{}

func parseJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := decodeJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

func decodeJSONValue(dec *json.Decoder, depth int) (any, error) {
	if depth > 1000 {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &jsonObject{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				o.keys = append(o.keys, k)
				o.vals = append(o.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case nil:
		return jsonNull, nil
	}
	return tok, nil // string, json.Number, bool
}

func writeJSON(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case *jsonObject:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			writeJSON(b, x.vals[i])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case string:
		writeJSONString(b, x)
	case json.Number:
		b.WriteString(string(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case jsonNullT, nil:
		b.WriteString("null")
	}
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s)
	b.Write(enc)
}

type pathSeg struct {
	key   string
	index int
	kind  byte // 'k' key, 'i' index, '*' wildcard member, 'w' wildcard index
}

// parseJSONPath parses the SQL/JSON path subset $.a.b, $['a'], $[0],
// $[*], $.*, with an optional lax/strict mode prefix (both treated as lax).
func parseJSONPath(p string) ([]pathSeg, error) {
	p = strings.TrimSpace(p)
	p = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(p, "lax "), "strict "))
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("JSON path must start with '$': %q", p)
	}
	var segs []pathSeg
	for i := 1; i < len(p); {
		switch p[i] {
		case '.':
			j := i + 1
			if j < len(p) && p[j] == '[' { // $.["a.b"] is $["a.b"]
				i = j
				continue
			}
			if j < len(p) && p[j] == '*' {
				segs = append(segs, pathSeg{kind: '*'})
				i = j + 1
				continue
			}
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			if j == i+1 {
				return nil, fmt.Errorf("empty member name in JSON path %q", p)
			}
			segs = append(segs, pathSeg{kind: 'k', key: strings.Trim(p[i+1:j], `"`)})
			i = j
		case '[':
			j := strings.IndexByte(p[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unclosed '[' in JSON path %q", p)
			}
			in := strings.TrimSpace(p[i+1 : i+j])
			switch {
			case in == "*":
				segs = append(segs, pathSeg{kind: 'w'})
			case len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0]:
				segs = append(segs, pathSeg{kind: 'k', key: in[1 : len(in)-1]})
			default:
				n, err := strconv.Atoi(in)
				if err != nil || n < 0 {
					return nil, fmt.Errorf("bad array index %q in JSON path %q", in, p)
				}
				segs = append(segs, pathSeg{kind: 'i', index: n})
			}
			i += j + 1
		default:
			return nil, fmt.Errorf("unexpected %q in JSON path %q", p[i], p)
		}
	}
	return segs, nil
}

func evalJSONPath(doc any, segs []pathSeg) []any {
	cur := []any{doc}
	for _, s := range segs {
		var next []any
		for _, v := range cur {
			switch s.kind {
			case 'k':
				if o, ok := v.(*jsonObject); ok {
					for i, k := range o.keys {
						if k == s.key {
							next = append(next, o.vals[i])
							break
						}
					}
				}
			case '*':
				if o, ok := v.(*jsonObject); ok {
					next = append(next, o.vals...)
				}
			case 'i':
				if a, ok := v.([]any); ok && s.index < len(a) {
					next = append(next, a[s.index])
				}
			case 'w':
				if a, ok := v.([]any); ok {
					next = append(next, a...)
				}
			}
		}
		cur = next
	}
	return cur
}

func jsonPathQuery(doc, path string) ([]any, bool) {
	v, err := parseJSON(doc)
	if err != nil {
		return nil, false
	}
	segs, err := parseJSONPath(path)
	if err != nil {
		return nil, false
	}
	return evalJSONPath(v, segs), true
}

// appendJSONValue serialises a SQL value as JSON (for JSON_STRING,
// JSON_OBJECT and JSON_ARRAY).
func appendJSONValue(b *bytes.Buffer, v any, t types.DataType) {
	if v == nil {
		b.WriteString("null")
		return
	}
	switch t.Kind {
	case types.KindBoolean:
		b.WriteString(strconv.FormatBool(v.(bool)))
	case types.KindTinyInt, types.KindSmallInt, types.KindInt, types.KindBigInt,
		types.KindFloat, types.KindDouble, types.KindDecimal:
		b.WriteString(types.CastToString(v, t, nil))
	case types.KindArray:
		b.WriteByte('[')
		for i, e := range v.([]any) {
			if i > 0 {
				b.WriteByte(',')
			}
			appendJSONValue(b, e, t.ElemType())
		}
		b.WriteByte(']')
	case types.KindMap:
		m := v.(*types.Map)
		b.WriteByte('{')
		for i := range m.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, types.CastToString(m.Keys[i], t.KeyType(), nil))
			b.WriteByte(':')
			appendJSONValue(b, m.Values[i], t.ValueType())
		}
		b.WriteByte('}')
	case types.KindRow:
		r := v.(types.Row)
		b.WriteByte('{')
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, f.Name)
			b.WriteByte(':')
			appendJSONValue(b, r[i], f.Type)
		}
		b.WriteByte('}')
	default:
		writeJSONString(b, types.CastToString(v, t, nil))
	}
}

func registerJSON(r *Registry) {
	// IS JSON [VALUE|OBJECT|ARRAY|SCALAR]: the kind is an optional string.
	r.add("IS JSON|IS_JSON", "IS JSON(<STRING> [, <'VALUE'|'OBJECT'|'ARRAY'|'SCALAR'>])", func(args []types.DataType) (*Scalar, error) {
		if len(args) < 1 || len(args) > 2 || !isString(args[0]) || len(args) == 2 && !isString(args[1]) {
			return nil, nil
		}
		return &Scalar{Result: tBool.NotNull(), Deterministic: true, Eval: func(_ *Context, a []any) (any, error) {
			if a[0] == nil {
				return false, nil
			}
			v, err := parseJSON(a[0].(string))
			if err != nil {
				return false, nil
			}
			kind := "VALUE"
			if len(a) > 1 && a[1] != nil {
				kind = strings.ToUpper(a[1].(string))
			}
			switch kind {
			case "OBJECT":
				_, ok := v.(*jsonObject)
				return ok, nil
			case "ARRAY":
				_, ok := v.([]any)
				return ok, nil
			case "SCALAR":
				switch v.(type) {
				case *jsonObject, []any:
					return false, nil
				}
				return true, nil
			}
			return true, nil
		}}, nil
	})
	r.add("JSON_EXISTS", "JSON_EXISTS(<STRING>, <STRING>)", strFn("ss", tBool.NotNull(), func(_ *Context, a []any) (any, error) {
		res, ok := jsonPathQuery(a[0].(string), a[1].(string))
		return ok && len(res) > 0, nil
	}))
	r.add("JSON_VALUE", "JSON_VALUE(<STRING>, <STRING>)", strFn("ss", tString, func(_ *Context, a []any) (any, error) {
		res, ok := jsonPathQuery(a[0].(string), a[1].(string))
		if !ok || len(res) != 1 {
			return nil, nil
		}
		switch x := res[0].(type) {
		case string:
			return x, nil
		case json.Number:
			return string(x), nil
		case bool:
			return strconv.FormatBool(x), nil
		}
		return nil, nil // objects, arrays and null are not scalar values
	}))
	r.add("JSON_QUERY", "JSON_QUERY(<STRING>, <STRING>)", strFn("ss", tString, func(_ *Context, a []any) (any, error) {
		res, ok := jsonPathQuery(a[0].(string), a[1].(string))
		if !ok || len(res) == 0 {
			return nil, nil
		}
		if len(res) > 1 { // a wildcard path's matches come back as an array
			var b bytes.Buffer
			writeJSON(&b, res)
			return b.String(), nil
		}
		switch res[0].(type) {
		case *jsonObject, []any:
			var b bytes.Buffer
			writeJSON(&b, res[0])
			return b.String(), nil
		}
		return nil, nil
	}))
	r.add("JSON_STRING", "JSON_STRING(<ANY>)", func(args []types.DataType) (*Scalar, error) {
		if len(args) != 1 {
			return nil, nil
		}
		t := args[0]
		return bind(args, args, tString.WithNullable(t.IsNullable()), true, func(_ *Context, a []any) (any, error) {
			var b bytes.Buffer
			appendJSONValue(&b, a[0], t)
			return b.String(), nil
		}), nil
	})
	r.add("JSON_OBJECT", "JSON_OBJECT([<STRING>, <ANY>]...)", func(args []types.DataType) (*Scalar, error) {
		if len(args)%2 != 0 {
			return nil, nil
		}
		for i := 0; i < len(args); i += 2 {
			if !isString(args[i]) {
				return nil, nil
			}
		}
		ts := append([]types.DataType(nil), args...)
		return &Scalar{Result: sNN, Deterministic: true, Eval: func(_ *Context, a []any) (any, error) {
			var b bytes.Buffer
			b.WriteByte('{')
			for i := 0; i < len(a); i += 2 {
				if a[i] == nil {
					return nil, fmt.Errorf("JSON_OBJECT: key must not be NULL")
				}
				if i > 0 {
					b.WriteByte(',')
				}
				writeJSONString(&b, a[i].(string))
				b.WriteByte(':')
				appendJSONValue(&b, a[i+1], ts[i+1]) // NULL ON NULL
			}
			b.WriteByte('}')
			return b.String(), nil
		}}, nil
	})
	r.add("JSON_ARRAY", "JSON_ARRAY(<ANY>...)", func(args []types.DataType) (*Scalar, error) {
		ts := append([]types.DataType(nil), args...)
		return &Scalar{Result: sNN, Deterministic: true, Eval: func(_ *Context, a []any) (any, error) {
			var b bytes.Buffer
			b.WriteByte('[')
			n := 0
			for i, v := range a {
				if v == nil {
					continue // ABSENT ON NULL
				}
				if n > 0 {
					b.WriteByte(',')
				}
				n++
				appendJSONValue(&b, v, ts[i])
			}
			b.WriteByte(']')
			return b.String(), nil
		}}, nil
	})
}
