"""The trusted kernel: parse, validate, evaluate and judge certificates; standard library only."""
