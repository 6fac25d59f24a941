print("tuttid")
