---- MODULE mapping_either ----
\* Golden: a mapping macro whose read body has an either (a flaky sensor that
\* yields the value or a stale zero), and whose write body has an if.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal mapping_either {
  mapping macro Flaky {
    read {
      either {
        yield $variable;
      } or {
        yield 0;
      };
    }
    write {
      if ($value > 5) {
        yield 5;
      } else {
        yield $value;
      };
    }
  }

  archetype ASensor(ref sensor, ref readings) {
  set:
    sensor := 9;
  sample:
    readings := readings \cup {sensor};
  }

  variables sensor = 1, readings = {};

  process (Sensor \in {1}) == instance ASensor(ref sensor, ref readings)
    mapping sensor via Flaky;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == sensor \in {1, 5} /\ readings \subseteq {0, 5}
====
