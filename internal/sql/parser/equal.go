package parser

import "reflect"

var (
	posType  = reflect.TypeOf(Pos{})
	stmtType = reflect.TypeOf(stmt{})
)

// Equal reports whether two trees are the same apart from positions and
// statements' source text. The planner can use it to match expressions, for
// example a GROUP BY expression against a select item.
func Equal(a, b Node) bool {
	return equalValue(reflect.ValueOf(a), reflect.ValueOf(b))
}

func equalValue(a, b reflect.Value) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Interface, reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalValue(a.Elem(), b.Elem())
	case reflect.Struct:
		if a.Type() == posType || a.Type() == stmtType {
			return true
		}
		for i := 0; i < a.NumField(); i++ {
			if !equalValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !equalValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Array:
		for i := 0; i < a.Len(); i++ {
			if !equalValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	panic("parser.Equal: unexpected field kind " + a.Kind().String())
}

var nodeType = reflect.TypeOf((*Node)(nil)).Elem()

// Inspect walks the tree depth-first, calling visit for n and, while visit
// returns true, for each node below it, in field order.
func Inspect(n Node, visit func(Node) bool) {
	if n == nil || reflect.ValueOf(n).IsNil() {
		return
	}
	if !visit(n) {
		return
	}
	inspectValue(reflect.ValueOf(n).Elem(), visit)
}

func inspectValue(v reflect.Value, visit func(Node) bool) {
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				inspectField(v.Field(i), visit)
			}
		}
	}
}

func inspectField(f reflect.Value, visit func(Node) bool) {
	switch f.Kind() {
	case reflect.Interface, reflect.Pointer:
		if f.IsNil() {
			return
		}
		if f.Type().Implements(nodeType) {
			Inspect(f.Interface().(Node), visit)
			return
		}
		inspectField(f.Elem(), visit)
	case reflect.Slice:
		for i := 0; i < f.Len(); i++ {
			inspectField(f.Index(i), visit)
		}
	case reflect.Struct:
		inspectValue(f, visit)
	}
}
