---- MODULE string_escapes_pcal ----
\* Hand translation of string_escapes to PlusCal, written independently of
\* the compiler.
EXTENDS Naturals, Sequences, TLC

(*
--algorithm string_escapes_pcal {
  variables gout = "";
  define {
    Quote == "say \"hi\""
    Slash == "a\\b"
  }

  process (P = "id \"1\"")
  variables greeting = "line\nbreak", s = "a\"b\\c\nd", t = "\t\r\f";
  {
  l1:
    gout := Quote \o "\\\"";
    print <<s, t, greeting, [k |-> "\\"]>>;
    assert gout = "say \"hi\"\\\"" /\ greeting = "line\nbreak";
  l2:
    s := s \o "\\" \o "\"" \o Slash;
    assert s = "a\"b\\c\nd\\\"a\\b" /\ "id \"1\"" \in {"id \"1\""};
  }
}
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == gout \in {"", "say \"hi\"\\\""}
====
