"""The rule engine: rule definitions (data in rules/), checks (code in topolint/checks), findings."""
