---- MODULE string_escapes ----
\* Golden: string literals with every TLA+ escape (\" \\ \n \t \r \f) in
\* the places the compiler copies or rewrites expressions: globals, the
\* define block, archetype locals and parameters, a mapping macro's write,
\* a macro's argument, with bindings, records, print and assert, and an
\* = process's id (which replaces self). pcal.trans and SANY must read the
\* printed strings back as the same values.
EXTENDS Naturals, Sequences, TLC

(*
--mpcal string_escapes {
  define {
    Quote == "say \"hi\""
    Slash == "a\\b"
  }

  macro Tag(v, t) {
    v := v \o t;
  }

  mapping macro Suffixed {
    read { yield $variable; }
    write { yield $value \o "\\\""; }
  }

  archetype A(ref out, greeting)
  variables s = "a\"b\\c\nd", t = "\t\r\f";
  {
  l1:
    out := Quote;
    print <<s, t, greeting, [k |-> "\\"]>>;
    assert out = "say \"hi\"\\\"" /\ greeting = "line\nbreak";
  l2:
    Tag(s, "\\");
    with (w = "\"" \o Slash) {
      s := s \o w;
    };
    assert s = "a\"b\\c\nd\\\"a\\b" /\ self = "id \"1\"";
  }

  variables gout = "";

  process (P = "id \"1\"") == instance A(ref gout, "line\nbreak")
    mapping gout via Suffixed;
}

\* BEGIN PLUSCAL TRANSLATION
\* END PLUSCAL TRANSLATION
*)
\* BEGIN TRANSLATION
\* END TRANSLATION

Inv == gout \in {"", "say \"hi\"\\\""}
====
