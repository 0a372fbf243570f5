package mpcal

import (
	"fmt"
	"reflect"
	"strings"

	"strata/mpcal/tla"
)

// dumpTree renders an algorithm (or any part of it) without positions,
// so that two trees can be compared: TLA+ expressions and units through
// tla.Dump, everything else field by field.
func dumpTree(v any) string {
	var b strings.Builder
	dumpValue(&b, reflect.ValueOf(v))
	return b.String()
}

var (
	exprType = reflect.TypeOf((*tla.Expr)(nil)).Elem()
	unitType = reflect.TypeOf((*tla.Unit)(nil)).Elem()
	posType  = reflect.TypeOf(Pos{})
)

// Fields that hold layout, not meaning.
var layoutFields = map[string]bool{"Start": true, "End": true, "PSyntax": true}

func dumpValue(b *strings.Builder, v reflect.Value) {
	if !v.IsValid() {
		b.WriteString("nil")
		return
	}
	if v.Type().Implements(exprType) || v.Type().Implements(unitType) {
		if v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
			if v.IsNil() {
				b.WriteString("nil")
				return
			}
		}
		b.WriteString(tla.Dump(v.Interface().(tla.Node)))
		return
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		if v.Kind() == reflect.Interface {
			dumpValue(b, v.Elem())
			return
		}
		dumpValue(b, v.Elem())
	case reflect.Struct:
		b.WriteString(v.Type().Name() + "{")
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Type == posType || layoutFields[f.Name] || !f.IsExported() {
				continue
			}
			b.WriteString(f.Name + ":")
			dumpValue(b, v.Field(i))
			b.WriteString(" ")
		}
		b.WriteString("}")
	case reflect.Slice:
		if v.Len() == 0 {
			// nil and empty lists mean the same.
			b.WriteString("[]")
			return
		}
		b.WriteString("[")
		for i := 0; i < v.Len(); i++ {
			dumpValue(b, v.Index(i))
			b.WriteString(",")
		}
		b.WriteString("]")
	default:
		fmt.Fprintf(b, "%v", v.Interface())
	}
}
