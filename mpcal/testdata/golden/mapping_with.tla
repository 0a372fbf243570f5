---- MODULE mapping_with ----
\* Golden: mapping macros using with: the read picks any element of a set
\* (with \in), the write binds an intermediate value (with =) and awaits.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal mapping_with {
  mapping macro Bag {
    read {
      await $variable /= {};
      with (e \in $variable) {
        $variable := $variable \ {e};
        yield e;
      };
    }
    write {
      with (next = $variable \cup {$value}) {
        yield next;
      };
    }
  }

  archetype ATake(ref bag, ref taken) {
  put:
    bag := 3;
  take:
    taken := taken \cup {bag};
  }

  variables bag = {1, 2}, taken = {};

  process (Take \in {1}) == instance ATake(ref bag, ref taken)
    mapping bag via Bag;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == bag \cup taken \subseteq {1, 2, 3} /\ bag \cap taken = {}
====
