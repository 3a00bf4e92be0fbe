# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.
