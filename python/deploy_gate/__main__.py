"""``python -m deploy_gate``: the ``deploy-gate`` command (``deploy_gate._cli``)."""

from ._cli import main

if __name__ == "__main__":
    main()
