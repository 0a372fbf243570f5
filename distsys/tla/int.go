package tla

import (
	"math"
	"math/big"
	"math/bits"
)

// Integer operators. Each takes an int64 fast path when both operands
// are small and the result provably fits, and math/big otherwise; big
// results are demoted when they fit (normBig), so equal integers always
// have one representation.

func intOperands(op string, a, b Value) error {
	if a.Kind() != KindInt {
		return typeError(op, "an integer", a)
	}
	if b.Kind() != KindInt {
		return typeError(op, "an integer", b)
	}
	return nil
}

// Plus is a + b.
func Plus(a, b Value) (Value, error) {
	if a.r == repInt && b.r == repInt {
		s := a.n + b.n
		// Overflow iff both operands have the sign the sum lacks.
		if (a.n^s)&(b.n^s) >= 0 {
			return Int(s), nil
		}
	} else if err := intOperands("+", a, b); err != nil {
		return Value{}, err
	}
	return normBig(new(big.Int).Add(bigOf(a), bigOf(b))), nil
}

// Minus is a - b.
func Minus(a, b Value) (Value, error) {
	if a.r == repInt && b.r == repInt {
		d := a.n - b.n
		// Overflow iff the operands' signs differ and the result's sign
		// differs from a's.
		if (a.n^b.n)&(a.n^d) >= 0 {
			return Int(d), nil
		}
	} else if err := intOperands("-", a, b); err != nil {
		return Value{}, err
	}
	return normBig(new(big.Int).Sub(bigOf(a), bigOf(b))), nil
}

// Neg is -a.
func Neg(a Value) (Value, error) {
	if a.r == repInt && a.n != math.MinInt64 {
		return Int(-a.n), nil
	}
	if a.Kind() != KindInt {
		return Value{}, typeError("-", "an integer", a)
	}
	return normBig(new(big.Int).Neg(bigOf(a))), nil
}

// Times is a * b.
func Times(a, b Value) (Value, error) {
	if a.r == repInt && b.r == repInt {
		hi, lo := bits.Mul64(abs64(a.n), abs64(b.n))
		if hi == 0 && lo <= math.MaxInt64 {
			p := int64(lo)
			if (a.n < 0) != (b.n < 0) {
				p = -p
			}
			return Int(p), nil
		}
	} else if err := intOperands("*", a, b); err != nil {
		return Value{}, err
	}
	return normBig(new(big.Int).Mul(bigOf(a), bigOf(b))), nil
}

// abs64 is |x| as a uint64 (correct for math.MinInt64 too).
func abs64(x int64) uint64 {
	if x < 0 {
		return uint64(-x) // wraps to 1<<63 for MinInt64, which is right
	}
	return uint64(x)
}

// Div is a \div b: the floor of a/b (TLA+ rounds toward negative
// infinity; Go's / truncates). b = 0 is an error.
func Div(a, b Value) (Value, error) {
	if err := intOperands(`\div`, a, b); err != nil {
		return Value{}, err
	}
	if b.r == repInt && b.n == 0 {
		return Value{}, errorf(`\div`, "division of %s by zero", show(a))
	}
	if a.r == repInt && b.r == repInt && !(a.n == math.MinInt64 && b.n == -1) {
		q := a.n / b.n
		if (a.n%b.n != 0) && ((a.n < 0) != (b.n < 0)) {
			q--
		}
		return Int(q), nil
	}
	q, m := new(big.Int), new(big.Int)
	q.DivMod(bigOf(a), bigOf(b), m) // Euclidean: m >= 0
	if m.Sign() != 0 && bigOf(b).Sign() < 0 {
		// Euclidean rounds up for negative divisors; floor rounds down.
		q.Sub(q, big.NewInt(1))
	}
	return normBig(q), nil
}

// Mod is a % b for b > 0: the r in 0..b-1 with a = b*(a \div b) + r. TLC
// rejects b <= 0, and so does this.
func Mod(a, b Value) (Value, error) {
	if err := intOperands("%", a, b); err != nil {
		return Value{}, err
	}
	if compareInt(b, Int(0)) <= 0 {
		return Value{}, errorf("%", "the divisor must be positive, got %s", show(b))
	}
	if a.r == repInt && b.r == repInt {
		r := a.n % b.n
		if r < 0 {
			r += b.n
		}
		return Int(r), nil
	}
	return normBig(new(big.Int).Mod(bigOf(a), bigOf(b))), nil // Euclidean = floor for b > 0
}

// maxPowBits bounds the size of a^b, which can otherwise exhaust memory
// from a tiny expression.
const maxPowBits = 1 << 20

// Pow is a^b for b >= 0 (0^0 = 1, as TLC).
func Pow(a, b Value) (Value, error) {
	if err := intOperands("^", a, b); err != nil {
		return Value{}, err
	}
	if compareInt(b, Int(0)) < 0 {
		return Value{}, errorf("^", "negative exponent %s", show(b))
	}
	base := bigOf(a)
	if b.r != repInt || (base.BitLen() > 1 && (b.n > maxPowBits || uint64(base.BitLen()-1)*uint64(b.n) > maxPowBits)) {
		if base.CmpAbs(big.NewInt(1)) > 0 {
			return Value{}, tooLarge("^", "%s^%s has more than %d bits", show(a), show(b), maxPowBits)
		}
	}
	if b.r != repInt {
		// |a| <= 1 here, and b is huge: only the parity matters.
		e := int64(bigOf(b).Bit(0)) + 2
		return normBig(new(big.Int).Exp(base, big.NewInt(e), nil)), nil
	}
	return normBig(new(big.Int).Exp(base, big.NewInt(b.n), nil)), nil
}

// intCompare is the shared body of < <= > >=.
func intCompare(op string, a, b Value) (int, error) {
	if a.r == repInt && b.r == repInt {
		switch {
		case a.n < b.n:
			return -1, nil
		case a.n > b.n:
			return 1, nil
		}
		return 0, nil
	}
	if err := intOperands(op, a, b); err != nil {
		return 0, err
	}
	return compareInt(a, b), nil
}

// Lt is a < b on integers.
func Lt(a, b Value) (Value, error) {
	c, err := intCompare("<", a, b)
	return Bool(c < 0), err
}

// Le is a <= b on integers.
func Le(a, b Value) (Value, error) {
	c, err := intCompare("<=", a, b)
	return Bool(c <= 0), err
}

// Gt is a > b on integers.
func Gt(a, b Value) (Value, error) {
	c, err := intCompare(">", a, b)
	return Bool(c > 0), err
}

// Ge is a >= b on integers.
func Ge(a, b Value) (Value, error) {
	c, err := intCompare(">=", a, b)
	return Bool(c >= 0), err
}

// InNat is x \in Nat.
func InNat(x Value) Value { return Bool(x.Kind() == KindInt && compareInt(x, Int(0)) >= 0) }

// InInt is x \in Int.
func InInt(x Value) Value { return Bool(x.Kind() == KindInt) }
