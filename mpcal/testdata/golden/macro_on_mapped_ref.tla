---- MODULE macro_on_mapped_ref ----
\* Golden: a PlusCal macro called from an archetype with a mapped ref as its
\* argument: the macro expands first, then each access of the resource goes
\* through the mapping macro.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal macro_on_mapped_ref {
  macro SendSum(chan, a, b) {
    await a < b;
    chan := a + b;
  }

  mapping macro Queue {
    read {
      await $variable /= <<>>;
      with (h = Head($variable)) {
        $variable := Tail($variable);
        yield h;
      };
    }
    write { yield Append($variable, $value); }
  }

  archetype ASend(ref chan) {
  send:
    SendSum(chan, 1, 2);
  send2:
    SendSum(chan, 2, 3);
  recv:
    assert chan = 3;
  }

  variables chan = <<>>;

  process (Send \in {1}) == instance ASend(ref chan)
    mapping chan via Queue;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == chan \in {<<>>, <<3>>, <<3, 5>>, <<5>>}
====
