from ragtruth_spans.cli import main

main()
