---- MODULE pcal_psyntax_uniprocess ----
\* Golden: plain PlusCal in P-syntax (no MPCal), a uniprocess algorithm:
\* variables, while ... do ... end while, if ... elsif ... else ... end if,
\* the compiler must pass it through.
EXTENDS Naturals, Sequences, TLC

CONSTANT N

(*
--algorithm pcal_psyntax_uniprocess
variables i = 0, evens = 0, odds = 0;
begin
  Loop:
    while i < N do
      if i % 2 = 0 then
        evens := evens + 1;
      elsif i = 3 then
        odds := odds + 10;
      else
        odds := odds + 1;
      end if;
      i := i + 1;
    end while;
  Check:
    assert evens + odds > 0;
end algorithm;

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == evens <= N /\ i <= N
====
