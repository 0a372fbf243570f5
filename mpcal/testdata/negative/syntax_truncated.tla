\* EXPECT: syntax 9:13 the file ends inside an archetype (unexpected end of input)
---- MODULE syntax_truncated ----
EXTENDS Naturals, TLC

(*
--mpcal syntax_truncated {
  archetype A(ref x) {
  l1:
    x := x +