console.log("voicewire cli placeholder")
