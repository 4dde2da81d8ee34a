import sys

from tunebot_mjlab.cli import main

sys.exit(main())
