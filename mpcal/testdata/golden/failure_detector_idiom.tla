---- MODULE failure_detector_idiom ----
\* Golden: the failure-detector idiom (Listing 10): either send, or await
\* fd[id] (an indexed resource mapped by a failure-detector mapping macro)
\* and handle the failure.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal failure_detector_idiom {
  mapping macro PerfectFD {
    read { yield $variable; }
    write { yield $value; }
  }

  archetype ANotify(ref net[_], ref fd[_], ref handled) {
  notify:
    either {
      net[2] := "hello";
    } or {
      await fd[2];
      handled := TRUE;
    };
  }

  archetype AFail(ref failed[_]) {
  die:
    failed[self] := TRUE;
  }

  variables inbox = [i \in 1..2 |-> ""], failed = [i \in 1..2 |-> FALSE], handled = FALSE;

  process (Notify \in {1}) == instance ANotify(ref inbox[_], ref failed[_], ref handled)
    mapping failed[_] via PerfectFD;
  process (Fail \in {2}) == instance AFail(ref failed[_]);
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == handled => failed[2]
====
