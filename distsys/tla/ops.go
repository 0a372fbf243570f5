package tla

// Eq is a = b. It never fails: values of different kinds are unequal
// (see the package comment).
func Eq(a, b Value) Value { return Bool(Equal(a, b)) }

// Neq is a # b.
func Neq(a, b Value) Value { return Bool(!Equal(a, b)) }

func boolOperands(op string, a, b Value) error {
	if a.r != repBool {
		return typeError(op, "a boolean", a)
	}
	if b.r != repBool {
		return typeError(op, "a boolean", b)
	}
	return nil
}

// Not is ~a.
func Not(a Value) (Value, error) {
	if a.r != repBool {
		return Value{}, typeError("~", "a boolean", a)
	}
	return Bool(a.n == 0), nil
}

// And is a /\ b with both operands already evaluated. Generated code
// that needs TLA+'s short-circuit (b is not evaluated when a is FALSE,
// which matters when b would fail) uses Go's && on AsBool instead.
func And(a, b Value) (Value, error) {
	if err := boolOperands(`/\`, a, b); err != nil {
		return Value{}, err
	}
	return Bool(a.n != 0 && b.n != 0), nil
}

// Or is a \/ b with both operands evaluated (see And).
func Or(a, b Value) (Value, error) {
	if err := boolOperands(`\/`, a, b); err != nil {
		return Value{}, err
	}
	return Bool(a.n != 0 || b.n != 0), nil
}

// Implies is a => b with both operands evaluated (see And).
func Implies(a, b Value) (Value, error) {
	if err := boolOperands("=>", a, b); err != nil {
		return Value{}, err
	}
	return Bool(a.n == 0 || b.n != 0), nil
}

// Equiv is a <=> b.
func Equiv(a, b Value) (Value, error) {
	if err := boolOperands("<=>", a, b); err != nil {
		return Value{}, err
	}
	return Bool(a.n == b.n), nil
}

// InBoolean is x \in BOOLEAN.
func InBoolean(x Value) Value { return Bool(x.r == repBool) }

// Boolean is the set BOOLEAN = {FALSE, TRUE}.
var Boolean = Set(False, True)
